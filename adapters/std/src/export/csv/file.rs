//! The CSV files' shared handling: refusing a symbolic link or a foreign file,
//! creating a file with its header or appending below it, and appending a batch of
//! rows so that a failed write leaves no part of a row behind.

use super::NAME;
use crate::export::ExportError;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// What [`CsvExporter::check`](super::CsvExporter::check) checks of one file: not a
/// symbolic link, and if it exists and is not empty, it starts with `header`. Reads
/// only; creates nothing.
pub(super) fn check_path(path: &Path, header: &str) -> Result<(), ExportError> {
    // A symbolic link planted where the file should be is refused when opening;
    // refused here already, before any other exporter of the list opens.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        let io = |e| ExportError::io(NAME, path, e);
        return Err(refused_link(path, rustix::io::Errno::LOOP.into()).unwrap_or_else(io));
    }
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path);
    match opened {
        Ok(mut file) => match file.metadata() {
            Ok(m) if m.len() > 0 => check_header(&mut file, path, header),
            _ => Ok(()),
        },
        // Missing, or unreadable: opening for writing says what is wrong.
        Err(_) => Ok(()),
    }
}

/// Opens `path` for appending, never through a link: a new file gets `header`, an
/// existing one must start with it, and one whose last row was cut short gets a line
/// end first. Answers the file and the bytes to append before the first row.
pub(super) fn open_path(path: &Path, header: &str) -> Result<(File, Vec<u8>), ExportError> {
    let io = |e| ExportError::io(NAME, path, e);
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        // Never follow a symlink planted where the file should be.
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|e| refused_link(path, e).unwrap_or_else(io))?;
    let len = file.metadata().map_err(io)?.len();
    let mut start = Vec::new();
    if len == 0 {
        start.extend_from_slice(header.as_bytes());
        start.extend_from_slice(b"\r\n");
    } else {
        check_header(&mut file, path, header)?;
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
        if last[0] != b'\n' {
            start.extend_from_slice(b"\r\n");
        }
    }
    Ok((file, start))
}

/// Appends `buf` to `file` and empties it. If that fails, the file is cut back to its
/// length before, so that a partial write leaves no part of a row behind.
pub(super) fn append(file: &mut File, buf: &mut Vec<u8>, path: &Path) -> std::io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    let before = file.metadata()?.len();
    let written = file.write_all(buf);
    buf.clear();
    if let Err(e) = written {
        if let Err(cut) = file.set_len(before) {
            log::error!(
                "{}: a failed append ({e}) may have left a cut row at the end: cutting the file back to {before} bytes failed too ({cut})",
                path.display()
            );
        }
        return Err(e);
    }
    Ok(())
}

fn check_header(file: &mut File, path: &Path, header: &str) -> Result<(), ExportError> {
    let mut head = vec![0u8; header.len() + 2];
    file.seek(SeekFrom::Start(0))
        .map_err(|e| ExportError::io(NAME, path, e))?;
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ExportError::io(NAME, path, e)),
        }
    }
    let head = &head[..got];
    let ok = head.starts_with(header.as_bytes())
        && matches!(&head[header.len()..], b"\r\n" | [b'\n', ..]);
    if ok {
        Ok(())
    } else {
        Err(ExportError::ForeignFile {
            exporter: NAME.to_string(),
            path: path.to_path_buf(),
            reason: format!("exists and does not start with the header `{header}`"),
        })
    }
}

/// Writes one RFC 4180 field, quoted only when it has to be.
pub(super) fn write_field(out: &mut impl Write, field: &str) -> std::io::Result<()> {
    if field.contains([',', '"', '\r', '\n']) {
        out.write_all(b"\"")?;
        out.write_all(field.replace('"', "\"\"").as_bytes())?;
        out.write_all(b"\"")
    } else {
        out.write_all(field.as_bytes())
    }
}

/// The error for a CSV path that is a symbolic link, which `open` refuses
/// (`O_NOFOLLOW`: a link planted there must not make the exporter write elsewhere),
/// in words rather than the bare `ELOOP` ("Too many levels of symbolic links");
/// `Err(e)` back for any other failure.
fn refused_link(path: &Path, e: std::io::Error) -> Result<ExportError, std::io::Error> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if e.raw_os_error() != Some(rustix::io::Errno::LOOP.raw_os_error()) || !is_link {
        return Err(e);
    }
    let target = std::fs::read_link(path).map_or_else(
        |_| "?".to_string(),
        |t| telering_core::text::Escaped::new(&t.to_string_lossy()).to_string(),
    );
    Ok(ExportError::ForeignFile {
        exporter: NAME.to_string(),
        path: path.to_path_buf(),
        reason: format!(
            "is a symbolic link (to {target}); the CSV file is never opened through a link, so that a link placed there cannot make telemetry write elsewhere"
        ),
    })
}
