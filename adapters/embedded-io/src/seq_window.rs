//! Where a frame's sequence number stands against the ones already received, for the
//! decoders' loss accounting (see `docs/LINK.md`, "Loss accounting on the receiver").
//!
//! A frame at or ahead of the one due moves the expected number forward; the frames it
//! skipped are a gap, counted once. A frame behind the one due never moves it back:
//! within [`SeqWindow::WINDOW`] frames of it, an identical copy of a frame received is a
//! *duplicate*, and a frame never received is *late* (its events were already counted
//! in a gap). Anything else behind (a number received with other content, or farther
//! back than the window or than the epoch's first frame) is a restart.

use std::collections::VecDeque;

/// Where a sequence number stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// No frame received yet.
    First,
    /// At or ahead of the one due, skipping this many frames (0: in order).
    Ahead(u32),
    /// An identical copy of a frame received within the window.
    Duplicate,
    /// Behind the one due, within the window and the epoch, never received: the
    /// frames of its gap were already counted.
    Late,
    /// Behind the one due and neither of the above: the sender restarted.
    Back,
}

/// The sequence numbers (and frame CRCs) received in the last frames of an epoch.
#[derive(Debug, Default)]
pub(crate) struct SeqWindow {
    expected: Option<u32>,
    /// The first sequence number of the epoch on this stream.
    first: u32,
    /// `(seq, crc)` of the last frames received, oldest first.
    recent: VecDeque<(u32, u32)>,
}

impl SeqWindow {
    /// How far behind the one due a frame may be to be late or a duplicate.
    pub(crate) const WINDOW: u32 = 64;

    /// The number due, if any frame was received.
    pub(crate) fn expected(&self) -> Option<u32> {
        self.expected
    }

    /// Where `seq` (with the frame's CRC `crc`) stands.
    pub(crate) fn step(&self, seq: u32, crc: u32) -> Step {
        let Some(expected) = self.expected else {
            return Step::First;
        };
        let ahead = seq.wrapping_sub(expected);
        if ahead < 1 << 31 {
            return Step::Ahead(ahead);
        }
        let behind = expected.wrapping_sub(seq);
        let since_first = expected.wrapping_sub(self.first);
        if self.recent.contains(&(seq, crc)) {
            Step::Duplicate
        } else if behind > Self::WINDOW
            || behind > since_first
            || self.recent.iter().any(|&(s, _)| s == seq)
        {
            Step::Back
        } else {
            Step::Late
        }
    }

    /// Records a frame received at or ahead of the one due (or the first).
    pub(crate) fn advance(&mut self, seq: u32, crc: u32) {
        if self.expected.is_none() {
            self.first = seq;
        }
        self.expected = Some(seq.wrapping_add(1));
        self.remember(seq, crc);
    }

    /// Records a late frame: the one due stays.
    pub(crate) fn late(&mut self, seq: u32, crc: u32) {
        self.remember(seq, crc);
    }

    /// Starts an epoch: the next frame is the first.
    pub(crate) fn restart(&mut self) {
        self.expected = None;
        self.recent.clear();
    }

    fn remember(&mut self, seq: u32, crc: u32) {
        if self.recent.len() == Self::WINDOW as usize {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, crc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_behind_is_late_duplicate_or_a_restart_and_never_moves_the_expected_number() {
        let mut w = SeqWindow::default();
        assert_eq!(w.step(10, 0), Step::First);
        w.advance(10, 0xA);
        assert_eq!(w.step(11, 0xB), Step::Ahead(0));
        assert_eq!(w.step(13, 0xD), Step::Ahead(2));
        w.advance(13, 0xD);
        assert_eq!(w.step(12, 0xC), Step::Late);
        w.late(12, 0xC);
        assert_eq!(w.expected(), Some(14));
        assert_eq!(w.step(12, 0xC), Step::Duplicate);
        assert_eq!(w.step(13, 0xD), Step::Duplicate);
        // The same number with other content, or before the epoch's first frame.
        assert_eq!(w.step(13, 0xE), Step::Back);
        assert_eq!(w.step(9, 0x9), Step::Back);
        assert_eq!(
            w.step(14u32.wrapping_sub(SeqWindow::WINDOW + 1), 1),
            Step::Back
        );
        w.restart();
        assert_eq!(w.step(1, 1), Step::First);
    }

    #[test]
    fn the_window_crosses_the_wrap_of_the_sequence_number() {
        let mut w = SeqWindow::default();
        w.advance(u32::MAX - 1, 1);
        w.advance(1, 2);
        assert_eq!(w.step(u32::MAX, 3), Step::Late);
        assert_eq!(w.step(0, 4), Step::Late);
        assert_eq!(w.step(u32::MAX - 1, 1), Step::Duplicate);
    }
}
