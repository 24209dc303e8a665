//! Opening a link's byte source, and reading it with a timeout so that a quiet link
//! still sees the stop flag: every source is a file descriptor, polled before each
//! read.

use super::spec::Source;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

/// A readable file descriptor.
pub trait FdRead: Read + AsFd + Send {}
impl<T: Read + AsFd + Send> FdRead for T {}

/// An open byte source.
pub struct LinkStream {
    inner: Box<dyn FdRead>,
}

impl std::fmt::Debug for LinkStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkStream").finish_non_exhaustive()
    }
}

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Got {
    /// These many bytes.
    Bytes(usize),
    /// Nothing within the timeout.
    Quiet,
    /// The source ended (end of file, peer closed, device gone).
    Ended,
}

impl LinkStream {
    /// Reads into `buf`, waiting at most `timeout` for bytes.
    pub fn read_timeout(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Got> {
        let ready = {
            let fd: BorrowedFd<'_> = self.inner.as_fd();
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let timeout = rustix::time::Timespec {
                tv_sec: timeout.as_secs() as i64,
                tv_nsec: i64::from(timeout.subsec_nanos()),
            };
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(n) => n > 0,
                Err(rustix::io::Errno::INTR) => return Ok(Got::Quiet),
                Err(e) => return Err(e.into()),
            }
        };
        if !ready {
            return Ok(Got::Quiet);
        }
        loop {
            return match self.inner.read(buf) {
                Ok(0) => Ok(Got::Ended),
                Ok(n) => Ok(Got::Bytes(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Got::Quiet),
                // A serial device unplugged, a connection reset: the link ended.
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(Got::Ended),
                Err(e) => Err(e),
            };
        }
    }
}

/// Opens a byte source (not a memory window). Errors say why, for the log line of a
/// link that will be tried again.
pub fn open(source: &Source) -> io::Result<LinkStream> {
    let inner: Box<dyn FdRead> = match source {
        Source::Tcp(addr) => {
            let mut last =
                io::Error::new(io::ErrorKind::NotFound, "the address resolves to nothing");
            let mut stream = None;
            for a in std::net::ToSocketAddrs::to_socket_addrs(addr.as_str())? {
                match std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                    Ok(s) => {
                        stream = Some(s);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            Box::new(stream.ok_or(last)?)
        }
        Source::Unix(path) => Box::new(std::os::unix::net::UnixStream::connect(path)?),
        Source::File(path) => Box::new(std::fs::File::open(path)?),
        Source::Stdin => Box::new(std::io::stdin()),
        Source::Serial { path, baud } => Box::new(open_serial(path, *baud)?),
        Source::Memory { .. } => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a memory window is not a byte stream",
            ));
        }
    };
    Ok(LinkStream { inner })
}

/// Opens a serial device in raw mode (no echo, no line editing, no translation of
/// bytes, 8 data bits) at `baud`.
fn open_serial(path: &std::path::Path, baud: u32) -> io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        // Not our controlling terminal: a device going away must not signal us.
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)?;
    let mut termios = rustix::termios::tcgetattr(&file)?;
    termios.make_raw();
    termios.set_speed(baud).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("baud rate {baud}: {e}"),
        )
    })?;
    rustix::termios::tcsetattr(&file, rustix::termios::OptionalActions::Now, &termios)?;
    Ok(file)
}

/// The wait before the next attempt to open a link that failed `attempt` times in a
/// row: 100 ms doubling up to `max`.
pub fn backoff(attempt: u32, max: Duration) -> Duration {
    let ms = 100u64.saturating_mul(1u64 << attempt.min(16));
    Duration::from_millis(ms).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let max = Duration::from_secs(5);
        assert_eq!(backoff(0, max), Duration::from_millis(100));
        assert_eq!(backoff(3, max), Duration::from_millis(800));
        assert_eq!(backoff(40, max), max);
    }

    #[test]
    fn a_serial_link_in_raw_mode_reads_every_byte_value() {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        use std::io::Write;
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let path = std::path::PathBuf::from(name.to_string_lossy().into_owned());
        let mut link = open(&Source::Serial {
            path,
            baud: 115_200,
        })
        .unwrap();
        let mut master = std::fs::File::from(master);
        // Raw mode: 0x00, 0x03 (^C), 0x0D (CR), 0x11 (XON) and 0xFF pass unchanged.
        let bytes: Vec<u8> = (0..=255).collect();
        master.write_all(&bytes).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while got.len() < 256 && std::time::Instant::now() < deadline {
            if let Got::Bytes(n) = link
                .read_timeout(&mut buf, Duration::from_millis(100))
                .unwrap()
            {
                got.extend_from_slice(&buf[..n]);
            }
        }
        assert_eq!(got, bytes);
    }
}
