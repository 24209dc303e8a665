//! `telering decode [--input FILE|-]`: events from a telering-embedded-io frame
//! stream (a firmware's UART capture, a serial port, a pipe), printed like `read`.
//!
//! The stream is fed to [`FrameDecoder`] as it arrives, so `decode` works on a live
//! port as well as on a file. Every damaged frame, sequence gap (frames that never
//! arrived) or trailing partial frame is reported on stderr as one line naming the
//! byte offset and the field at fault; the events around it are still printed, and
//! the run then ends with exit code 1.

use crate::error::CliError;
use crate::output::{EventFormat, message_line, shown_path, write_event};
use std::io::{Read, Write};
use std::path::Path;
use telering_embedded_io::FrameDecoder;

/// What a finished `decode` saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Events printed.
    pub events: u64,
    /// Problems reported (damaged frames, gaps, a partial frame at the end).
    pub problems: u64,
    /// Frames known to be missing from sequence gaps.
    pub frames_missing: u64,
}

/// Decodes the frame stream read from `input` (named `label` in messages), printing
/// events to `out` and problems to `err`.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_cli::{decode::decode, output::EventFormat};
/// use telering_embedded_io::FrameExporter;
///
/// let mut line = Vec::new();
/// let mut exporter = FrameExporter::new(&mut line);
/// exporter.export(&Event::new(3, Category::Custom, event_name!("dpu_queue_depth"), 17)).unwrap();
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let summary = decode(&mut &line[..], "-".as_ref(), EventFormat::Json, &mut out, &mut err).unwrap();
/// assert_eq!((summary.events, summary.problems), (1, 0));
/// assert!(String::from_utf8(out).unwrap().contains("\"event\":\"dpu_queue_depth\",\"value\":17"));
/// ```
pub fn decode(
    input: &mut dyn Read,
    label: &Path,
    format: EventFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<DecodeSummary, CliError> {
    let mut decoder = FrameDecoder::new();
    let mut summary = DecodeSummary::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(CliError::Input {
                    path: label.to_path_buf(),
                    source,
                });
            }
        };
        for item in decoder.feed(&buf[..n]) {
            match item {
                Ok(event) => {
                    write_event(out, &event, format).map_err(CliError::Output)?;
                    summary.events += 1;
                }
                Err(e) => {
                    summary.problems += 1;
                    let _ = writeln!(
                        err,
                        "telering: {}: {}",
                        shown_path(label),
                        message_line(&e.to_string())
                    );
                }
            }
        }
        // A live stream: show what arrived without waiting for the buffer to fill.
        out.flush().map_err(CliError::Output)?;
    }
    if let Some(e) = decoder.finish() {
        summary.problems += 1;
        let _ = writeln!(
            err,
            "telering: {}: {}",
            shown_path(label),
            message_line(&e.to_string())
        );
    }
    summary.frames_missing = decoder.frames_missing();
    out.flush().map_err(CliError::Output)?;
    if summary.problems > 0 {
        return Err(CliError::Incomplete {
            path: label.to_path_buf(),
            count: summary.problems,
            what: "frame stream problems",
        });
    }
    Ok(summary)
}
