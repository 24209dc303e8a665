#!/usr/bin/env bash
# Instructions per telering_add_route_xfer_stats call from C (the route number
# checked against the routes the telemetry handed out), under callgrind, for
# BENCHMARKS.md ("Routes"): the release libtelering, benches/c/route_call_instructions.c
# built with -O2, only the measured loop collected (its own instructions included).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p telering-ffi >&2
lib="${CARGO_TARGET_DIR:-target}/release"
out="$(mktemp -d)"
cc -O2 -I adapters/ffi/include benches/c/route_call_instructions.c -L "$lib" -ltelering_ffi \
    -Wl,-rpath,"$(cd "$lib" && pwd)" -o "$out/bench"
collected=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect=measure_route_calls "$out/bench" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
python3 -c "print(f'telering_add_route_xfer_stats from C: {$collected/50000:.1f} instructions per call')"
rm -r "$out"
