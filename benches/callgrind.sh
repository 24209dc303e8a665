#!/usr/bin/env bash
# Instructions per recording call under callgrind, for BENCHMARKS.md.
#
# Builds benches/examples/recording_instructions.rs with `--features callgrind`
# (rustix then finds the vDSO through libc, which valgrind can follow), and runs each
# contender's workload under `valgrind --tool=callgrind`, collecting only inside the
# measured function: once as is ("all"), once with the contender's clock functions
# toggled off as well ("own": the path's own instructions). telering's inline
# counter read (`rdtsc`: 3 instructions) cannot be toggled off; "own" subtracts 3 per
# read (telering-tsc: 1 per event or add_xfer_stats call; both telering rows: 3 per
# transfer, whose durations come from the counter; the recorder rows likewise).
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
for contender in nixl-today nixl-earlier telering-untimed telering-tsc recorder-untimed recorder-tsc; do
    case $contender in
        nixl-today) clocks=('*Instant>::now' 'quanta::Clock::raw') ;;
        nixl-earlier) clocks=('*SystemTime>::now' '*Instant>::now') ;;
        *) clocks=('telering_std::clock::stamp::monotonic_ns') ;;
    esac
    for workload in event stats transfer; do
        all=$(collected "$contender" "$workload")
        own=$(collected "$contender" "$workload" "${clocks[@]}")
        inline=0
        case $contender-$workload in
            telering-tsc-event | telering-tsc-stats | recorder-tsc-event | recorder-tsc-stats) inline=3 ;;
            telering-*-transfer | recorder-*-transfer) inline=9 ;;
        esac
        python3 -c "print(f'| $contender | $workload | {$all/$calls:.0f} | {$own/$calls - $inline:.0f} |')"
    done
done
rm -r "$out"
