//! A version-2 frame on its way out: [`Body`], the body being built, and [`Line`],
//! which numbers it, seals it with the CRC-32 and writes it COBS-encoded.
//!
//! Written for the smallest firmware: no step can panic (a write past the end of the
//! body is dropped and counted in its length, which the caller checks against the
//! room it needs), so neither bounds-check panics nor `core::fmt` are linked, and
//! every field goes through the same three byte writers.

use super::varint;
use super::wire::{
    CRC_LEN, HEADER_LEN, Hello, KIND_HELLO, LINK_VERSION, MAX_AGENT_LEN, MAX_BODY_V2,
    MAX_VERSION_LEN,
};
use crate::frame::crc32;
use embedded_io::Write;

/// A frame body of at most [`MAX_BODY_V2`] bytes, CRC included.
///
/// 8-byte aligned: clearing it then calls the same `__aeabi_memclr8` as the rest of a
/// firmware (the ring's slots), not a second copy of the routine for 4-byte
/// alignment (174 bytes on Cortex-M3).
#[repr(align(8))]
pub(super) struct Body {
    bytes: [u8; MAX_BODY_V2],
    /// Bytes written, and bytes that did not fit: more than `MAX_BODY_V2` means some
    /// were dropped.
    len: usize,
}

impl Body {
    pub(super) const fn new() -> Body {
        Body {
            bytes: [0; MAX_BODY_V2],
            len: 0,
        }
    }

    /// Bytes used (0: nothing written).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Forgets the bytes after the first `len`.
    pub(super) fn truncate(&mut self, len: usize) {
        self.len = len;
    }

    /// Whether the bytes written so far and the CRC-32 fit in a frame.
    pub(super) fn fits(&self) -> bool {
        self.len + CRC_LEN <= MAX_BODY_V2
    }

    /// Starts the body again with a header of `kind`; its sequence number is set
    /// when the frame is written.
    pub(super) fn header(&mut self, kind: u8) {
        self.len = 0;
        self.put(LINK_VERSION);
        self.put(kind);
        self.len = HEADER_LEN;
    }

    pub(super) fn put(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
        }
        self.len += 1;
    }

    pub(super) fn put_varint(&mut self, value: u64) {
        varint::each_byte(value, |byte| self.put(byte));
    }

    /// A length byte and the bytes (at most 255 of them: every text the encoder
    /// writes is shorter).
    pub(super) fn put_text(&mut self, text: &[u8]) {
        let text = text.get(..255).unwrap_or(text);
        self.put(text.len() as u8);
        for &byte in text {
            self.put(byte);
        }
    }
}

/// The writer, and what the encoder knows about it: whether it started (the hello
/// went out), the next sequence number, whether the last frame was cut short, and the
/// counts of frames.
pub(super) struct Line<W> {
    pub(super) writer: W,
    pub(super) started: bool,
    pub(super) next_seq: u32,
    /// A write failed, perhaps mid-frame: the next frame starts with a zero so the
    /// torn one does not run into it.
    torn: bool,
    pub(super) frames_written: u64,
    pub(super) frames_failed: u64,
}

impl<W: Write> Line<W> {
    pub(super) const fn new(writer: W) -> Line<W> {
        Line {
            writer,
            started: false,
            next_seq: 0,
            torn: false,
            frames_written: 0,
            frames_failed: 0,
        }
    }

    /// Before the first frame: a zero, then `hello` (built in `body`).
    pub(super) fn start(&mut self, hello: &Hello<'_>, body: &mut Body) -> Result<(), W::Error> {
        if self.started {
            return Ok(());
        }
        // One zero ends whatever noise the line carried before the first frame.
        self.writer.write_all(&[0])?;
        self.started = true;
        self.write_hello(hello, body)
    }

    /// The hello frame, built in `body`.
    pub(super) fn write_hello(
        &mut self,
        hello: &Hello<'_>,
        body: &mut Body,
    ) -> Result<(), W::Error> {
        body.header(KIND_HELLO);
        body.put_varint(u64::from(hello.ticks_per_second));
        body.put_varint(u64::from(hello.ring_capacity));
        body.put_text(fit(hello.agent, MAX_AGENT_LEN));
        body.put_text(fit(hello.firmware_version, MAX_VERSION_LEN));
        self.send(body)
    }

    /// Gives `body` the next sequence number, appends its CRC-32, writes it
    /// COBS-encoded with its delimiter, and uses up the sequence number whatever
    /// happens. `body` fits ([`Body::fits`]).
    pub(super) fn send(&mut self, body: &mut Body) -> Result<(), W::Error> {
        let len = body.len.min(MAX_BODY_V2 - CRC_LEN);
        let seq = self.next_seq.to_le_bytes();
        if let Some(field) = body.bytes.get_mut(2..HEADER_LEN) {
            field.copy_from_slice(&seq);
        }
        self.next_seq = self.next_seq.wrapping_add(1);
        let crc = crc32(&body.bytes[..len]).to_le_bytes();
        body.len = len;
        for byte in crc {
            body.put(byte);
        }
        let mut result = Ok(());
        if self.torn {
            result = self.writer.write_all(&[0]);
        }
        let result = result.and_then(|()| write_cobs(&mut self.writer, &body.bytes[..body.len]));
        self.torn = result.is_err();
        match result {
            Ok(()) => self.frames_written += 1,
            Err(_) => self.frames_failed += 1,
        }
        result
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
fn fit(text: &str, max: usize) -> &[u8] {
    let mut len = text.len().min(max);
    while !text.is_char_boundary(len) {
        len -= 1;
    }
    text.as_bytes().get(..len).unwrap_or_default()
}

/// Writes `body` (at most 253 bytes) COBS-encoded, then the `0x00` delimiter,
/// straight to the writer: no second buffer. With fewer than 254 bytes every run of
/// non-zero bytes is shorter than 254, so each run is one length code plus the run.
fn write_cobs<W: Write>(writer: &mut W, body: &[u8]) -> Result<(), W::Error> {
    let mut rest = body;
    loop {
        let run = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let (bytes, after) = rest.split_at(run);
        writer.write_all(&[run as u8 + 1])?;
        writer.write_all(bytes)?;
        match after.split_first() {
            Some((_zero, next)) => rest = next,
            None => break,
        }
    }
    writer.write_all(&[0])
}
