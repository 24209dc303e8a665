//! Splitting a link's byte stream at its delimiters, as both host decoders read it.
//!
//! COBS removes zeros from frames, so every `0x00` on the line ends one *chunk*: the
//! bytes since the delimiter before it. Two delimiters in a row end nothing. A chunk
//! grows across reads until its delimiter arrives, up to [`Chunker::MAX_CHUNK`] bytes;
//! past that its bytes are dropped as they come and only their number is kept, so
//! memory stays bounded whatever the line carries. The decoders decide what a chunk
//! was: the version-1 [`FrameDecoder`](crate::FrameDecoder) and the
//! [`LinkDecoder`](crate::link::LinkDecoder).

use crate::frame::ENCODED_FRAME_LEN;

/// What one delimiter ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// A chunk of at most [`Chunker::MAX_CHUNK`] bytes. Hand `bytes` back with
    /// [`Chunker::recycle`] to keep its buffer.
    Chunk { start: u64, bytes: Vec<u8> },
    /// A chunk longer than [`Chunker::MAX_CHUNK`]: its length only.
    Oversized { start: u64, len: u64 },
}

/// Bytes left after the last delimiter when the stream ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unfinished {
    /// Stream offset of their first byte.
    pub start: u64,
    /// How many.
    pub len: u64,
    /// They were more than [`Chunker::MAX_CHUNK`] (and were not kept).
    pub oversized: bool,
}

/// The chunk being gathered and the stream's offset.
#[derive(Debug, Default)]
pub(crate) struct Chunker {
    /// Bytes since the last delimiter (at most `MAX_CHUNK`).
    chunk: Vec<u8>,
    /// Stream offset of the first byte of `chunk`.
    chunk_start: u64,
    /// Stream offset of the next byte fed.
    offset: u64,
    /// Bytes of the current chunk once it exceeded `MAX_CHUNK` (0: not exceeded).
    oversized: u64,
}

impl Chunker {
    /// Longest run of bytes without a delimiter kept.
    pub(crate) const MAX_CHUNK: usize = 1024;

    /// Takes bytes from the front of `rest` up to and including the next delimiter
    /// that ends a chunk, and returns that chunk. Returns `None` once `rest` is used
    /// up without one; its bytes are kept for the next call.
    pub(crate) fn next(&mut self, rest: &mut &[u8]) -> Option<Ended> {
        while !rest.is_empty() {
            let Some(at) = rest.iter().position(|&b| b == 0) else {
                self.append(rest);
                *rest = &[];
                return None;
            };
            self.append(&rest[..at]);
            self.offset += 1;
            *rest = &rest[at + 1..];
            let start = self.chunk_start;
            let ended = if self.oversized > 0 {
                Some(Ended::Oversized {
                    start,
                    len: self.oversized,
                })
            } else if !self.chunk.is_empty() {
                let bytes = core::mem::take(&mut self.chunk);
                Some(Ended::Chunk { start, bytes })
            } else {
                None
            };
            self.reset();
            if ended.is_some() {
                return ended;
            }
        }
        None
    }

    /// Takes back a chunk's buffer, so the next chunk needs no allocation.
    pub(crate) fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.chunk.is_empty() && self.chunk.capacity() < bytes.capacity() {
            bytes.clear();
            self.chunk = bytes;
        }
    }

    /// Ends the stream: the bytes left after the last delimiter, if any. The next
    /// byte fed starts a new chunk.
    pub(crate) fn finish(&mut self) -> Option<Unfinished> {
        let left = if self.oversized > 0 {
            Some((self.oversized, true))
        } else {
            (!self.chunk.is_empty()).then_some((self.chunk.len() as u64, false))
        };
        let start = self.chunk_start;
        self.reset();
        left.map(|(len, oversized)| Unfinished {
            start,
            len,
            oversized,
        })
    }

    /// Bytes fed so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The capacity of the chunk buffer held now.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.chunk.capacity()
    }

    fn append(&mut self, piece: &[u8]) {
        self.offset += piece.len() as u64;
        if piece.is_empty() {
            return;
        }
        if self.oversized > 0 {
            self.oversized += piece.len() as u64;
        } else if self.chunk.len() + piece.len() > Self::MAX_CHUNK {
            self.oversized = (self.chunk.len() + piece.len()) as u64;
            self.chunk = Vec::new();
        } else {
            self.chunk.extend_from_slice(piece);
        }
    }

    fn reset(&mut self) {
        self.chunk.clear();
        self.oversized = 0;
        self.chunk_start = self.offset;
    }
}

/// A decoder that reads its stream through a [`Chunker`]: what it makes of each chunk.
pub(crate) trait Chunked {
    /// The decoder's chunker.
    fn chunker(&mut self) -> &mut Chunker;
    /// A chunk ended, starting at stream offset `start`; it may be decoded in place.
    fn chunk(&mut self, bytes: &mut [u8], start: u64);
    /// A chunk longer than [`Chunker::MAX_CHUNK`] ended.
    fn oversized(&mut self, start: u64, len: u64);

    /// Feeds `bytes`: each chunk a delimiter in them ends goes to the decoder.
    fn split(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(ended) = self.chunker().next(&mut rest) {
            match ended {
                Ended::Chunk { start, mut bytes } => {
                    self.chunk(&mut bytes, start);
                    self.chunker().recycle(bytes);
                }
                Ended::Oversized { start, len } => self.oversized(start, len),
            }
        }
    }
}

/// A copy of a chunk's last [`ENCODED_FRAME_LEN`] bytes when it is longer than one
/// version-1 frame: noise with no zero before a frame arrives in the frame's chunk,
/// and decoding in place overwrites the chunk, so the tail is kept to be tried alone.
pub(crate) fn frame_tail(chunk: &[u8]) -> Option<[u8; ENCODED_FRAME_LEN]> {
    let from = chunk
        .len()
        .checked_sub(ENCODED_FRAME_LEN)
        .filter(|&n| n > 0)?;
    let mut tail = [0u8; ENCODED_FRAME_LEN];
    tail.copy_from_slice(&chunk[from..]);
    Some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(chunker: &mut Chunker, bytes: &[u8]) -> Vec<(u64, Result<Vec<u8>, u64>)> {
        let mut rest = bytes;
        let mut out = Vec::new();
        while let Some(ended) = chunker.next(&mut rest) {
            out.push(match ended {
                Ended::Chunk { start, bytes } => (start, Ok(bytes)),
                Ended::Oversized { start, len } => (start, Err(len)),
            });
        }
        out
    }

    #[test]
    fn each_delimiter_ends_the_bytes_since_the_last_one_across_reads() {
        let mut chunker = Chunker::default();
        assert_eq!(chunks(&mut chunker, b"\0\0ab"), []);
        assert_eq!(
            chunks(&mut chunker, b"c\0d\0\0"),
            [(2, Ok(b"abc".to_vec())), (6, Ok(b"d".to_vec()))]
        );
        assert_eq!(chunks(&mut chunker, b"ef"), []);
        assert_eq!(chunker.offset(), 11);
        let left = Unfinished {
            start: 9,
            len: 2,
            oversized: false,
        };
        assert_eq!(chunker.finish(), Some(left));
        assert_eq!(chunker.finish(), None);
    }

    #[test]
    fn a_chunk_past_the_bound_is_counted_not_kept() {
        let mut chunker = Chunker::default();
        let long = vec![7u8; Chunker::MAX_CHUNK];
        assert_eq!(chunks(&mut chunker, &long), []);
        let ended = chunks(&mut chunker, b"x\0y\0");
        assert_eq!(ended, [(0, Err(1025)), (1026, Ok(b"y".to_vec()))]);
        assert_eq!(chunks(&mut chunker, &long), []);
        assert_eq!(chunks(&mut chunker, b"zz"), []);
        let left = Unfinished {
            start: 1028,
            len: 1026,
            oversized: true,
        };
        assert_eq!(chunker.finish(), Some(left));
    }

    #[test]
    fn a_recycled_buffer_is_reused_for_the_next_chunk() {
        let mut chunker = Chunker::default();
        let mut rest: &[u8] = &[1; 64];
        assert!(chunker.next(&mut rest).is_none());
        let mut rest: &[u8] = b"\0";
        let Some(Ended::Chunk { bytes, .. }) = chunker.next(&mut rest) else {
            panic!("a chunk");
        };
        let capacity = bytes.capacity();
        chunker.recycle(bytes);
        assert_eq!(chunker.chunk.capacity(), capacity);
        assert!(chunker.chunk.is_empty());
    }

    #[test]
    fn only_a_chunk_longer_than_a_frame_has_a_tail() {
        assert_eq!(frame_tail(&[1; ENCODED_FRAME_LEN]), None);
        let mut chunk = vec![9u8; 5];
        chunk.extend([3u8; ENCODED_FRAME_LEN]);
        assert_eq!(frame_tail(&chunk), Some([3; ENCODED_FRAME_LEN]));
    }
}
