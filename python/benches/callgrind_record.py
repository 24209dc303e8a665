#!/usr/bin/env python3
"""Instructions per record() call, counted by valgrind's callgrind, for telering and
the pure-Python baseline of bench_python.py.

    RUSTFLAGS="--cfg rustix_use_libc" CARGO_TARGET_DIR=target/cg \
        pip install --target /tmp/telering-cg ./python
    PYTHONPATH=/tmp/telering-cg python python/benches/callgrind_record.py

Under valgrind the package must be built with rustix's libc backend: rustix's own
backend finds the vDSO's clock_gettime through the auxiliary vector, which valgrind
does not present as the kernel does, and the first clock read crashes.

Each contender runs twice under callgrind, with N1 and N2 calls; the difference of
the two instruction totals over N2 - N1 is the cost of one call, with interpreter
start-up and imports cancelled out.
"""

import os
import re
import subprocess
import sys
import tempfile

N1, N2 = 20_000, 120_000

WORKLOAD = r"""
import sys, threading, time
import telering
from telering import Category
which, n = sys.argv[1], int(sys.argv[2])
if which == "telering":
    t = telering.Telemetry("cg", enabled=True, exporter="nop", lane_capacity=1 << 20, run_interval=3600)
    call = t.record
else:
    lock = threading.Lock()
    events = []
    def call(category, name, value):
        with lock:
            events.append((time.time_ns(), category, name, value))
def run(call, n, category=Category.CUSTOM):
    for i in range(n):
        call(category, "queue_depth", i)
run(call, n)
"""


def instructions(which, n, directory):
    out = os.path.join(directory, "cg.%s.%d" % (which, n))
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable, "-c", WORKLOAD, which, str(n)],
        check=True, capture_output=True,
    )
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError("no instruction total in " + out)


def main():
    with tempfile.TemporaryDirectory() as d:
        rows = []
        for which in ("telering", "baseline"):
            per_call = (instructions(which, N2, d) - instructions(which, N1, d)) / (N2 - N1)
            rows.append((which, per_call))
    print("| contender | instructions per call (callgrind) |")
    print("|---|---|")
    for which, per_call in rows:
        name = "telering record()" if which == "telering" else "pure Python (Lock + list + time_ns)"
        print("| %s | %.0f |" % (name, per_call))
    print("\nratio baseline / telering: %.2f×" % (rows[1][1] / rows[0][1]))


if __name__ == "__main__":
    main()
