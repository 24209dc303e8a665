//! The exporter: drained events out as frames, over any [`embedded_io::Write`].

use crate::frame::{FRAME_WIRE_LEN, encode_frame};
use core::fmt;
use embedded_io::Write;
use telering_core::ring::EventOwner;
use telering_core::{Consumer, Event};

/// Writes events as frames (see the crate docs for the format) to `W`.
///
/// It owns no buffer beyond one 68-byte frame on the stack, so it suits the smallest
/// targets; the writer decides whether a write blocks (a polled UART) or queues (a
/// DMA buffer).
pub struct FrameExporter<W> {
    writer: W,
    next_seq: u32,
    synchronised: bool,
    frames_written: u64,
    frames_failed: u64,
}

impl<W> fmt::Debug for FrameExporter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameExporter")
            .field("next_seq", &self.next_seq)
            .field("frames_written", &self.frames_written)
            .field("frames_failed", &self.frames_failed)
            .finish_non_exhaustive()
    }
}

impl<W: Write> FrameExporter<W> {
    /// An exporter writing to `writer`, starting at sequence number 0.
    pub fn new(writer: W) -> FrameExporter<W> {
        FrameExporter {
            writer,
            next_seq: 0,
            synchronised: false,
            frames_written: 0,
            frames_failed: 0,
        }
    }

    /// Writes one event as one frame. Before the first frame a single `0x00` is
    /// written so that the receiver's decoder starts clean.
    ///
    /// A write error loses this event; its sequence number is used up all the same,
    /// so the receiving decoder reports the gap, and [`FrameExporter::frames_failed`]
    /// counts it on this side.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_embedded_io::{FrameExporter, FRAME_WIRE_LEN};
    ///
    /// let mut line = [0u8; 1 + FRAME_WIRE_LEN];
    /// let mut exporter = FrameExporter::new(&mut line[..]);
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 2);
    /// assert!(exporter.export(&e).is_ok());
    /// assert!(exporter.export(&e).is_err()); // the slice is full
    /// assert_eq!((exporter.frames_written(), exporter.frames_failed()), (1, 1));
    /// ```
    pub fn export(&mut self, event: &Event) -> Result<(), W::Error> {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut wire = [0u8; FRAME_WIRE_LEN];
        let len = encode_frame(seq, event, &mut wire);
        let result = self.write_synchronised(&wire[..len]);
        match result {
            Ok(()) => self.frames_written += 1,
            Err(_) => self.frames_failed += 1,
        }
        result
    }

    fn write_synchronised(&mut self, frame: &[u8]) -> Result<(), W::Error> {
        if !self.synchronised {
            self.writer.write_all(&[0])?;
            self.synchronised = true;
        }
        self.writer.write_all(frame)
    }

    /// Takes up to `max` events from `consumer` and writes each as a frame. Returns
    /// how many were written, or the first write error: the event whose write failed
    /// is counted in [`FrameExporter::frames_failed`], the events after it stay in
    /// the ring for the next call.
    pub fn drain<R: EventOwner>(
        &mut self,
        consumer: &mut Consumer<R>,
        max: usize,
    ) -> Result<usize, W::Error> {
        let mut written = 0;
        while written < max {
            let Some(event) = consumer.pop() else { break };
            self.export(&event)?;
            written += 1;
        }
        Ok(written)
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> Result<(), W::Error> {
        self.writer.flush()
    }

    /// Frames written completely.
    pub fn frames_written(&self) -> u64 {
        self.frames_written
    }

    /// Frames (one event each) lost to write errors.
    pub fn frames_failed(&self) -> u64 {
        self.frames_failed
    }

    /// The sequence number the next frame gets.
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// The writer.
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// The writer, mutably.
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    /// Gives the writer back.
    pub fn into_inner(self) -> W {
        self.writer
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::{FrameDecoder, FrameErrorKind};
    use telering_core::{Category, OverflowPolicy, Ring, event_name};

    /// A line that breaks down once: the write that crosses `fail_at` delivers only the
    /// bytes before it, then fails; later writes go through.
    struct FlakyLine {
        bytes: Vec<u8>,
        fail_at: usize,
        failed: bool,
    }

    impl embedded_io::ErrorType for FlakyLine {
        type Error = embedded_io::ErrorKind;
    }

    impl Write for FlakyLine {
        fn write(&mut self, buf: &[u8]) -> Result<usize, embedded_io::ErrorKind> {
            if !self.failed && self.bytes.len() + buf.len() > self.fail_at {
                let room = self.fail_at - self.bytes.len();
                self.bytes.extend_from_slice(&buf[..room]);
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
    fn a_write_failing_mid_frame_is_counted_here_and_seen_as_a_gap_there() {
        let ring = Ring::<16>::new();
        let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
        for v in 0..6 {
            let e = Event::new(v, Category::Custom, event_name!("fw_counter"), v);
            producer.push(&e).unwrap();
        }
        let line = FlakyLine {
            bytes: Vec::new(),
            fail_at: 1 + 2 * crate::FRAME_WIRE_LEN + 30, // inside frame 2
            failed: false,
        };
        let mut exporter = FrameExporter::new(line);
        assert!(exporter.drain(&mut consumer, usize::MAX).is_err());
        assert_eq!(
            (exporter.frames_written(), exporter.frames_failed()),
            (2, 1)
        );
        // The events after the failed one stayed in the ring.
        assert_eq!(exporter.drain(&mut consumer, usize::MAX).ok(), Some(3));

        let mut decoder = FrameDecoder::new();
        let items: Vec<_> = decoder.feed(&exporter.into_inner().bytes).collect();
        assert_eq!(decoder.finish(), None);
        let values: Vec<u64> = items.iter().flatten().map(Event::value).collect();
        assert_eq!(values, [0, 1, 3, 4, 5]);
        let errors: Vec<FrameErrorKind> = items
            .iter()
            .filter_map(|i| i.as_ref().err())
            .map(|e| e.kind)
            .collect();
        // The torn frame ran into the next one, which was kept; then the gap.
        assert_eq!(errors[0], FrameErrorKind::Garbage { len: 30 });
        assert!(matches!(
            errors[1],
            FrameErrorKind::FramesMissing { count: 1, .. }
        ));
        assert_eq!(decoder.frames_missing(), 1);
    }
}
