#!/usr/bin/env bash
# Instructions per push + pop of the core ring and its anchors under callgrind, for
# BENCHMARKS.md ("telering-core").
#
# Builds benches/examples/ring_instructions.rs and runs each (case, contender) under
# `valgrind --tool=callgrind`, collecting only inside the measured function, and
# divides by the events moved. Counts include the ring set-up inside the function
# (split, or the queue's allocation), spread over 102 400 events: under 0.1 per event.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p telering-benches --example ring_instructions >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/ring_instructions"
out="$(mktemp -d)"
events=102400

printf '| case | contender | instructions per push + pop |\n|---|---|---|\n'
for case in interleaved batches; do
    contenders="telering-unobserved telering-observed rtrb heapless crossbeam"
    [ "$case" = batches ] && contenders="telering-unobserved telering-observed telering-observed-slice rtrb heapless crossbeam"
    for contender in $contenders; do
        n=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
            --toggle-collect="ring_instructions::measure_${case}_*" \
            "$bin" "$case" "$contender" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
        python3 -c "print(f'| $case | $contender | {$n/$events:.1f} |')"
    done
done
rm -r "$out"
