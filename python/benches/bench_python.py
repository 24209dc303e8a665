#!/usr/bin/env python3
"""Side-by-side benchmarks of the telering Python package against its anchors.

    python python/benches/bench_python.py [--rounds 7] [--calls 200000] [--events 1000000]

Needs the package installed (pip install ./python), NumPy, and the Rust reader
reference built: cargo build --release -p telering-benches --example drain_file
(found through $CARGO_TARGET_DIR or ./target, or $TELERING_DRAIN_FILE).

1. One record() call from Python vs a pure-Python recorder (a threading.Lock and a
   list, with time.time_ns()): ns per call, same thread, same arguments.
2. Reading 10^6 events from a ring file into NumPy (read_numpy) vs the stdlib reader
   examples/python/nixl_telemetry_reader.py popping them one by one.
3. read_numpy's events/s vs the Rust draining reader's (the drain_file example) on
   copies of the same file.

Contenders run interleaved in every round, after one warm-up round; the table gives
the median and min-max over the rounds, and each round's ratio.
"""

import argparse
import importlib.util
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import telering
from telering import Category

REPO = pathlib.Path(__file__).resolve().parents[2]


def load_example_reader():
    path = REPO / "examples" / "python" / "nixl_telemetry_reader.py"
    spec = importlib.util.spec_from_file_location("nixl_telemetry_reader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def drain_file_binary():
    explicit = os.environ.get("TELERING_DRAIN_FILE")
    if explicit:
        return explicit
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    path = target / "release" / "examples" / "drain_file"
    if not path.exists():
        sys.exit("build the Rust reference first: cargo build --release -p telering-benches --example drain_file")
    return str(path)


class PurePythonRecorder:
    """The baseline: what a Python agent writes without telering."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []

    def record(self, category, name, value):
        with self.lock:
            self.events.append((time.time_ns(), category, name, value))


def time_calls(call, calls):
    # The category is looked up once, as a program would keep it: on Python 3.11
    # an enum attribute lookup costs as much as the record call itself.
    category = Category.CUSTOM
    start = time.perf_counter_ns()
    for i in range(calls):
        call(category, "queue_depth", i)
    return (time.perf_counter_ns() - start) / calls


def bench_record(rounds, calls):
    telemetry = telering.Telemetry(
        "bench-record", enabled=True, exporter="nop", lane_capacity=1 << 20, run_interval=0.005
    )
    record = telemetry.record
    rows = {"telering record()": [], "pure Python (Lock + list + time_ns)": []}
    # Each round alternates the contenders in 20 slices, so that a burst of load
    # from other processes on the shared machine hits both alike.
    slices = 20
    per_slice = max(1, calls // slices)
    for r in range(rounds + 1):
        baseline = PurePythonRecorder()
        t_ns = b_ns = 0.0
        for _ in range(slices):
            t_ns += time_calls(record, per_slice)
            b_ns += time_calls(baseline.record, per_slice)
        assert len(baseline.events) == slices * per_slice
        if r == 0:
            continue  # warm-up
        rows["telering record()"].append(t_ns / slices)
        rows["pure Python (Lock + list + time_ns)"].append(b_ns / slices)
    telemetry.flush()
    stats = telemetry.stats()
    telemetry.close()
    assert stats["events_recorded"] == (rounds + 1) * slices * per_slice
    assert stats["events_dropped"] == 0, "lanes overflowed: the measure would count drops"
    return rows


def make_ring(directory, events):
    """A ring file holding `events` events, written by telering from Python."""
    assert events < 1 << 20
    with telering.Telemetry(
        "bench-read", enabled=True, dir=directory, buffer_size=1 << 20, lane_capacity=1 << 20,
        run_interval=0.01,
    ) as t:
        for i in range(events):
            t.record(Category.TRANSFER, "agent_tx_bytes", i)
    path = pathlib.Path(directory) / "bench-read"
    assert telering.stat(path)["fill"] == events
    return path


def bench_read(rounds, events, directory):
    master = make_ring(directory, events)
    reader = load_example_reader()
    drain_file = drain_file_binary()
    numpy_s, pop_s, rust_s = [], [], []
    for r in range(rounds + 1):
        copies = [pathlib.Path(directory) / ("copy-%d" % k) for k in range(3)]
        for c in copies:
            shutil.copyfile(master, c)

        start = time.perf_counter_ns()
        array = telering.read_numpy(copies[0])
        t_numpy = time.perf_counter_ns() - start
        assert len(array) == events and int(array["value"][-1]) == events - 1

        start = time.perf_counter_ns()
        ring = reader.SharedRingBuffer(str(copies[1]), version=1)
        n = 0
        total = 0
        while (event := ring.pop()) is not None:
            n += 1
            total += event.value
        ring.close()
        t_pop = time.perf_counter_ns() - start
        assert n == events and total == events * (events - 1) // 2

        out = subprocess.run([drain_file, str(copies[2])], capture_output=True, text=True, check=True)
        got, t_rust = (int(x) for x in out.stdout.split())
        assert got == events

        for c in copies:
            c.unlink()
        if r == 0:
            continue
        numpy_s.append(t_numpy / 1e9)
        pop_s.append(t_pop / 1e9)
        rust_s.append(t_rust / 1e9)
    return numpy_s, pop_s, rust_s


def spread(values, fmt):
    return fmt % statistics.median(values), (fmt + "–" + fmt) % (min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    assert args.rounds >= 7 or os.environ.get("TELERING_BENCH_SHORT"), "at least 7 rounds"

    print("telering Python benchmarks: %d rounds after one warm-up, Python %s, load average %.1f at start\n"
          % (args.rounds, sys.version.split()[0], os.getloadavg()[0]))

    rows = bench_record(args.rounds, args.calls)
    telering_ns = rows["telering record()"]
    baseline_ns = rows["pure Python (Lock + list + time_ns)"]
    speedups = [b / t for t, b in zip(telering_ns, baseline_ns)]
    print("#### One record() call from Python (%d calls per round)\n" % args.calls)
    print("| contender | median ns/call | min–max ns/call |")
    print("|---|---|---|")
    for name, values in rows.items():
        print("| %s | %s | %s |" % ((name,) + spread(values, "%.1f")))
    print("\nspeed-up of telering over the pure-Python baseline: median %s, min–max %s (target ≥ 3×)\n"
          % spread(speedups, "%.2f×"))

    with tempfile.TemporaryDirectory(prefix="telering-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        numpy_s, pop_s, rust_s = bench_read(args.rounds, args.events, d)
    n = args.events
    print("#### Reading %d events from a ring file\n" % n)
    print("| contender | median ms | min–max ms | median M events/s |")
    print("|---|---|---|---|")
    for name, values in (
        ("telering.read_numpy (NumPy array)", numpy_s),
        ("examples/python/nixl_telemetry_reader.py, pop() one by one", pop_s),
        ("Rust DrainingReader, read_batch into a Vec (drain_file)", rust_s),
    ):
        ms = [v * 1e3 for v in values]
        print("| %s | %s | %s | %.2f |" % ((name,) + spread(ms, "%.1f") + (n / statistics.median(values) / 1e6,)))
    over_pop = [p / t for t, p in zip(numpy_s, pop_s)]
    of_rust = [r / t for t, r in zip(numpy_s, rust_s)]
    print("\nread_numpy vs popping one by one: median %s, min–max %s faster (target ≥ 50×)" % spread(over_pop, "%.0f×"))
    print("read_numpy throughput / Rust reader throughput: median %s, min–max %s (target ≥ 0.5×)" % spread(of_rust, "%.2f×"))


if __name__ == "__main__":
    main()
