//! The conservation matrix's NIXL source: NIXL's agent (the NIXL-shaped host) through
//! the plug-in into a ring file nothing drains. The file's own account holds to
//! `recorded = delivered + counted as lost` (`docs/LOSS.md`), NIXL's reported losses
//! included, whatever the ring had room for.

mod common;

use common::{Setup, read_ring, run_expecting};
use telering_conservation::Cause;

#[test]
fn conservation_nixl_events_and_losses_into_a_full_ring_are_all_in_its_account() {
    // 3 batches of 200 events, each with NIXL's report of 50 losses, into 64 slots.
    let setup = Setup::new();
    let rings = setup.path("rings");
    run_expecting(
        setup
            .host(&["--events", "200", "--batches", "3", "--dropped", "50"])
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "64")
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    let ring = rings.join("nixl-agent");
    let held = read_ring(&ring);
    // Type 20 is the loss report: in band, not a recorded event.
    let reports = held.get(&20).map_or(0, |(count, _)| *count);
    let trailer = telering_shm::stat(&ring).unwrap().trailer.unwrap();
    let mut ledger = telering_conservation::Ledger::new("nixl ring file");
    ledger.delivered = trailer.published - reports;
    ledger.charge(Cause::RingFull, trailer.dropped_ring_full);
    ledger.charge(Cause::Upstream, trailer.dropped_staging);
    ledger.assert_conserves(600 + 150);
    ledger.assert_charged(Cause::Upstream, 150);
    assert_eq!(ledger.delivered, 63 - reports, "{ledger}");
}
