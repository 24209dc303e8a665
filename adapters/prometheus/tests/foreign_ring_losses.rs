//! A ring NIXL's own writer made (no trailer) says what it lost only in its in-band
//! `AGENT_TELEMETRY_EVENTS_DROPPED` reports, which count the events NIXL's staging
//! queue dropped: the collector names their cause `staging`, not `ring_full`.

use std::path::Path;
use std::time::Duration;

use telering_prometheus::collector::{CollectorOptions, ExportState, NodeCollector, ReadMode};

/// A ring file as NIXL ≥ 1.3.1 writes it (version 4, 16-byte slots: type u32 @0,
/// value u64 @8; no trailer), built byte by byte.
fn nixl_v4_ring(path: &Path, slots: &[(u32, u64)]) {
    let capacity = 16u64;
    let mut b = vec![0u8; 40 + capacity as usize * 16];
    b[0..8].copy_from_slice(&(slots.len() as u64).to_le_bytes());
    b[16..20].copy_from_slice(&4i32.to_le_bytes());
    b[20..24].copy_from_slice(&4i32.to_le_bytes());
    b[24..32].copy_from_slice(&capacity.to_le_bytes());
    b[32..40].copy_from_slice(&(capacity - 1).to_le_bytes());
    for (i, (type_number, value)) in slots.iter().enumerate() {
        let at = 40 + i * 16;
        b[at..at + 4].copy_from_slice(&type_number.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&value.to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn nixls_in_band_loss_reports_in_a_ring_without_a_trailer_are_staging_losses() {
    let dir = tempfile::tempdir().unwrap();
    // agent_tx_bytes, then NIXL's report of 7 events its staging queue dropped.
    nixl_v4_ring(&dir.path().join("nixl-agent"), &[(0, 100), (20, 7)]);
    let mut o = CollectorOptions::new(dir.path());
    o.mode = ReadMode::Drain;
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    let agent = &c.agents()[0];
    assert_eq!(agent.loss.losses.staging, 7, "{agent:?}");
    assert_eq!(agent.loss.losses.ring_full, 0, "{agent:?}");
    assert_eq!(agent.loss.state, ExportState::Dropping, "{agent:?}");
    assert_eq!(agent.loss.dropping, ["staging"], "{agent:?}");
    assert_eq!(
        c.model()
            .lock()
            .counter("nixl-agent", "agent_telemetry_events_dropped"),
        Some(7)
    );
}

#[test]
fn a_file_that_becomes_a_ring_in_place_is_followed() {
    // NIXL's writer makes its file in place (create, size, map), so a scan may find it
    // before it is a ring: it is taken up once it is one, under the same inode.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nixl-agent");
    std::fs::write(&path, b"part").unwrap();
    let mut o = CollectorOptions::new(dir.path());
    o.mode = ReadMode::Drain;
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert!(c.agents().is_empty());
    nixl_v4_ring(&path, &[(0, 100)]);
    c.poll();
    assert_eq!(c.agents().len(), 1);
    assert_eq!(
        c.model().lock().counter("nixl-agent", "agent_tx_bytes"),
        Some(100)
    );
}

#[test]
fn a_foreign_ring_unlinked_and_made_again_while_drained_continues_its_series() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nixl-agent");
    nixl_v4_ring(&path, &[(0, 100), (20, 2)]);
    let mut o = CollectorOptions::new(dir.path());
    o.mode = ReadMode::Drain;
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(c.agents()[0].loss.losses.staging, 2);
    // Another NIXL run removes the file and makes it again.
    std::fs::remove_file(&path).unwrap();
    c.poll();
    nixl_v4_ring(&path, &[(0, 5), (0, 6), (20, 3)]);
    c.poll();
    // The reader read the old file to its end and took up the new one: the series
    // goes on, with both runs' events and losses.
    let agent = &c.agents()[0];
    assert_eq!(agent.loss.losses.staging, 2 + 3, "{agent:?}");
    assert_eq!(
        c.model().lock().counter("nixl-agent", "agent_tx_bytes"),
        Some(100 + 11)
    );
}
