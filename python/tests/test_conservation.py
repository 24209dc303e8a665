"""The conservation matrix's Python source: a Python agent's ``stats()``, its
``exporter_stats()`` and its ring file hold to ``recorded = delivered + counted as
lost``, each loss charged to its cause (docs/LOSS.md), with a full lane, a full ring
and no reader, and a ring written again by an agent of another size."""

import json
import subprocess

import telering


def lost(stats):
    return (
        stats["events_dropped"]
        + stats["exporter_dropped"]
        + stats["events_not_in_layout"]
        + stats["events_undelivered"]
    )


def assert_conserves(stats, recorded):
    assert stats["events_recorded"] == recorded, stats
    assert stats["events_exported"] + lost(stats) == recorded, stats


def test_conservation_a_full_lane_is_charged_at_record(tdir):
    with telering.Telemetry(
        "lane", enabled=True, dir=tdir, lane_capacity=16, early_flush=False, run_interval=3600
    ) as t:
        for _ in range(100):
            t.update_tx_bytes(1)
        t.flush()
        s = t.stats()
    assert_conserves(s, 100)
    # A lane of 16 holds 15.
    assert s["events_dropped"] == 85, s
    assert s["events_exported"] == 15, s


def test_conservation_a_full_ring_without_reader_is_charged_ring_full_in_stats_and_file(tdir, cli):
    with telering.Telemetry(
        "ring", enabled=True, dir=tdir, buffer_size=64, lane_capacity=1024, early_flush=False, run_interval=3600
    ) as t:
        for _ in range(10):
            for _ in range(50):
                t.update_rx_bytes(1)
            t.flush()
        s = t.stats()
        each = t.exporter_stats()
    assert_conserves(s, 500)
    # A ring of 64 holds 63 slots: 62 events and the report of what it refused.
    assert s["events_exported"] == 62 and s["exporter_dropped"] == 500 - 62, s
    assert [e["name"] for e in each] == ["buffer"], each
    stat = json.loads(subprocess.run([cli, "stat", "--json", str(tdir / "ring")], check=True, capture_output=True, text=True).stdout)
    assert stat["trailer"]["published"] == 63, stat
    assert stat["trailer"]["dropped_ring_full"] == 500 - 62, stat
