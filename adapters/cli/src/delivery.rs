//! What `telering read` can say about the events it took when its output closes.
//!
//! `read` releases a batch of slots only after the batch's output was written and
//! flushed, so an event leaves the ring only once it is in the output. Output written
//! into a pipe can still be lost: the pipe holds it until the reading end reads it,
//! and a reader that exits early (`telering read f | head -5`) never does. When the
//! next write then fails with `EPIPE`, [`Delivery`] says how many events were taken
//! and, for a pipe, how many of them at most never reached its reader: the batch
//! whose write failed plus the events whose bytes were still in the pipe, as the
//! pipe's `FIONREAD` tells.

use std::collections::VecDeque;

/// Output offsets further back than this are not kept: no pipe holds more by default
/// (`/proc/sys/fs/pipe-max-size` is 1 MiB).
const TRACKED_BYTES: u64 = 1 << 20;

/// The bytes the reading end of standard output has not read yet, when standard
/// output is a pipe; `None` for anything else, or when the kernel does not say.
pub fn stdout_unread_bytes() -> Option<u64> {
    let stdout = std::io::stdout();
    let stat = rustix::fs::fstat(&stdout).ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Fifo {
        return None;
    }
    rustix::io::ioctl_fionread(&stdout).ok()
}

/// The events a draining run took and where their output ended.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Events taken from the ring (their slots released).
    taken: u64,
    /// Output bytes written successfully.
    written: u64,
    /// The output offset just past each recently written event, oldest first.
    ends: VecDeque<u64>,
    /// The end of the newest event dropped from `ends`.
    forgotten_end: u64,
}

impl Delivery {
    /// Nothing taken yet.
    pub fn new() -> Delivery {
        Delivery::default()
    }

    /// Events taken so far.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Records a batch whose output was written: `ends` are the offsets just past
    /// each event within the batch's `bytes`; `slots` counts every slot released,
    /// corrupt ones included.
    pub fn delivered(&mut self, slots: u64, ends: &[usize], bytes: usize) {
        self.taken += slots;
        for &end in ends {
            self.ends.push_back(self.written + end as u64);
        }
        self.written += bytes as u64;
        while self
            .ends
            .front()
            .is_some_and(|&end| end + TRACKED_BYTES < self.written)
        {
            self.forgotten_end = self.ends.pop_front().unwrap_or(self.forgotten_end);
        }
    }

    /// Records a batch whose slots were released but whose write failed after
    /// `partial` of its bytes went out; `ends` as for [`Delivery::delivered`].
    pub fn lost(&mut self, slots: u64, ends: &[usize], partial: usize) -> LostOutput<'_> {
        let whole = ends.iter().take_while(|&&end| end <= partial).count();
        self.delivered(whole as u64, &ends[..whole], partial);
        let failed = slots.saturating_sub(whole as u64);
        self.taken += failed;
        LostOutput {
            taken: self.taken,
            failed_batch: failed,
            delivered: self,
        }
    }
}

/// The account of a run whose output closed: see [`LostOutput::unreached`].
#[derive(Debug)]
pub struct LostOutput<'a> {
    taken: u64,
    failed_batch: u64,
    delivered: &'a Delivery,
}

impl LostOutput<'_> {
    /// Events taken from the ring, the failed batch included.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// At most how many of the taken events never reached the output's reader, given
    /// the bytes `unread` still in the output (a pipe's `FIONREAD`); `None` when that
    /// is unknown. An event counts when any of its bytes was unread, so the number is
    /// an upper bound.
    ///
    /// ```
    /// use telering_cli::delivery::Delivery;
    /// let mut d = Delivery::new();
    /// d.delivered(3, &[10, 20, 30], 30); // three 10-byte events reached the pipe
    /// // The next batch of two failed to write after 4 of its 20 bytes went out.
    /// let lost = d.lost(2, &[10, 20], 4);
    /// assert_eq!(lost.taken(), 5);
    /// // 19 bytes unread: half of event 2, all of event 3, the partial 4 bytes.
    /// assert_eq!(lost.unreached(Some(19)), Some(4));
    /// assert_eq!(lost.unreached(Some(0)), Some(2));
    /// assert_eq!(lost.unreached(None), None);
    /// ```
    pub fn unreached(&self, unread: Option<u64>) -> Option<u64> {
        let unread = unread?;
        let d = self.delivered;
        let read_up_to = d.written.saturating_sub(unread);
        if read_up_to < d.forgotten_end {
            // The unread bytes reach further back than the offsets kept.
            return None;
        }
        let in_pipe = d.ends.iter().filter(|&&end| end > read_up_to).count() as u64;
        Some(self.failed_batch + in_pipe)
    }
}
