#!/usr/bin/env bash
# Instructions per transfer the flush spends, with and without keeping each route's
# slowest transfers, under callgrind, for BENCHMARKS.md.
#
# Builds benches/examples/slow_selection.rs with `--features callgrind` (as
# callgrind.sh does) and runs each mode under `valgrind --tool=callgrind`, collecting
# only inside `slow_selection::measure_flush`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p telering-benches --features callgrind --example slow_selection >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/slow_selection"
out="$(mktemp -d)"
transfers=$((20 * 5000))

printf '| mode | flush instructions per transfer |\n|---|---|\n'
for mode in none passed kept; do
    collected=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
        --toggle-collect='slow_selection::measure_flush' "$bin" "$mode" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    python3 -c "print(f'| $mode | {$collected/$transfers:.1f} |')"
done
rm -r "$out"
