//! The file mode follows the process umask unless one is configured. This file holds
//! one test only: the umask belongs to the whole process.

mod common;

use common::TempDir;
use std::os::unix::fs::PermissionsExt;
use telering_shm::{ShmWriter, WriterOptions};

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn the_file_mode_is_0644_less_the_umask_unless_configured() {
    let dir = TempDir::new("umask");
    for (umask, expected) in [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0, 0o644)] {
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
        let name = format!("agent-{umask:o}");
        let w = ShmWriter::create(WriterOptions::new(dir.path(), name.as_str())).unwrap();
        assert_eq!(mode_of(w.path()), expected, "umask {umask:o}");
        // A configured mode is set exactly, whatever the umask.
        let mut o = WriterOptions::new(dir.path(), format!("{name}-configured"));
        o.mode = Some(0o664);
        let configured = ShmWriter::create(o.clone()).unwrap();
        assert_eq!(mode_of(configured.path()), 0o664, "umask {umask:o}");
        // ...also when a dead writer's ring is reused in place.
        drop(configured);
        o.mode = Some(0o660);
        let reused = ShmWriter::create(o).unwrap();
        assert_eq!(mode_of(reused.path()), 0o660, "umask {umask:o}");
    }
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
}
