"""Python and the Rust `telering` command read each other's rings, with exact counts."""

import collections
import json
import os
import subprocess
import threading

import telering
from telering import Category


def read_json(cli, path):
    out = subprocess.run([cli, "read", "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_python_records_and_telering_read_reads_every_event(cli, tdir):
    with telering.Telemetry("py-agent", enabled=True, dir=tdir, buffer_size=1 << 14) as t:
        for i in range(3000):
            t.record(Category.CUSTOM, "py_counter", i)
        for i in range(500):
            t.add_xfer_stats(100 + i, i % 2 == 0, 4096, 3)
        t.update_error_count("NIXL_ERR_BACKEND")
        t.backend("UCX").add_telemetry_event("ucx_retries", 2)
    events = read_json(cli, tdir / "py-agent")
    assert len(events) == 3000 + 4 * 500 + 1 + 1
    counts = collections.Counter(e["event"] for e in events)
    assert counts["py_counter"] == 3000
    assert counts["agent_tx_bytes"] == 250 and counts["agent_rx_bytes"] == 250
    assert counts["agent_xfer_time"] == 500 and counts["NIXL_ERR_BACKEND"] == 1
    assert [e["value"] for e in events if e["event"] == "py_counter"] == list(range(3000))
    assert sum(e["value"] for e in events if e["event"] == "agent_xfer_time") == sum(range(100, 600))
    assert {e["category"] for e in events if e["event"] == "ucx_retries"} == {"BACKEND"}
    assert telering.stat(tdir / "py-agent")["fill"] == 0  # `telering read` drained it


def test_python_records_from_four_threads_and_telering_read_counts_them(cli, tdir):
    per_thread = 10_000
    with telering.Telemetry("py-mt", enabled=True, dir=tdir, buffer_size=1 << 16, run_interval=0.01) as t:
        threads = [
            threading.Thread(target=lambda k=k: [t.update_tx_bytes(k * per_thread + i) for i in range(per_thread)])
            for k in range(4)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert t.stats()["events_dropped"] == 0
    events = read_json(cli, tdir / "py-mt")
    assert len(events) == 4 * per_thread
    assert sorted(e["value"] for e in events) == list(range(4 * per_thread))
    assert {e["event"] for e in events} == {"agent_tx_bytes"}


def test_telering_demo_writes_and_python_reads_exactly(cli, tdir):
    out = subprocess.run(
        [cli, "demo", "--dir", str(tdir), "--agent", "rust-demo", "--events", "20000", "--rate", "0",
         "--no-serve", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["events_recorded"] == 20000 and summary["events_dropped"] == 0
    path = tdir / "rust-demo"
    with telering.SharedRingBuffer(path, version=1) as ring:
        first = ring.pop()
        rest = ring.to_numpy()
    names = [first.name] + [n.decode() for n in rest["event_name"].tolist()]
    values = [first.value] + rest["value"].tolist()
    assert len(names) == 20000
    counts = collections.Counter(names)
    sums = collections.Counter()
    for n, v in zip(names, values):
        sums[n] += v
    expected = summary["names"]
    assert counts == {name: s["count"] for name, s in expected.items()}
    assert sums == {name: s["sum"] for name, s in expected.items()}


def test_python_observes_a_ring_telering_read_then_drains(cli, tdir):
    with telering.Telemetry("both", enabled=True, dir=tdir) as t:
        for i in range(100):
            t.update_rx_bytes(i)
    with telering.Observer(tdir / "both") as obs:
        assert [e.value for e in obs] == list(range(100))
    assert [e["value"] for e in read_json(cli, tdir / "both")] == list(range(100))


def test_telering_read_is_refused_while_python_drains(cli, tdir):
    with telering.Telemetry("one-drainer", enabled=True, dir=tdir) as t:
        for i in range(10):
            t.update_rx_bytes(i)
    with telering.SharedRingBuffer(tdir / "one-drainer") as ring:
        out = subprocess.run(
            [cli, "read", "--json", str(tdir / "one-drainer")], capture_output=True, text=True, timeout=120
        )
        assert out.returncode != 0 and out.stdout == "", out
        assert "another draining reader (pid %d)" % os.getpid() in out.stderr, out.stderr
        assert [e.value for e in ring] == list(range(10))  # the refused reader took nothing
