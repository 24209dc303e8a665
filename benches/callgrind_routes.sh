#!/usr/bin/env bash
# Instructions per recording call with and without a route, under callgrind, for
# BENCHMARKS.md ("Routes"). Same build and method as benches/callgrind.sh: only the
# measured function is collected, and the "own" column toggles the clock functions
# off and subtracts telering's inline counter reads (3 instructions each: 1 per
# add_xfer_stats call, 3 per transfer).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p telering-benches --features callgrind --example recording_instructions >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/recording_instructions"
out="$(mktemp -d)"
calls=50000

collected() { # contender workload [extra toggles...]
    local contender=$1 workload=$2
    shift 2
    local toggles=(--toggle-collect="recording_instructions::measure_${workload}_*")
    for f in "$@"; do toggles+=(--toggle-collect="$f"); done
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "${toggles[@]}" \
        "$bin" "$contender" "$workload" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

printf '| contender | workload | instructions per call, all | own (clock reads excluded) |\n|---|---|---|---|\n'
for contender in ${CONTENDERS:-telering-untimed route-untimed telering-tsc route-tsc recorder-untimed recorder-route-untimed recorder-tsc recorder-route-tsc}; do
    for workload in stats transfer; do
        all=$(collected "$contender" "$workload")
        own=$(collected "$contender" "$workload" 'telering_std::clock::stamp::monotonic_ns')
        inline=0
        case $contender-$workload in
            *-tsc-stats) inline=3 ;;
            *-transfer) inline=9 ;;
        esac
        python3 -c "print(f'| $contender | $workload | {$all/$calls:.0f} | {$own/$calls - $inline:.0f} |')"
    done
done
rm -r "$out"
