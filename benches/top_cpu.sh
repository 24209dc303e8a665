#!/usr/bin/env bash
# CPU used by `telering top` itself while 64 rings are each written at 10 000
# events/s (examples/top_load.rs), at the default 1 s display interval, in a real
# terminal (tmux). The view's utime+stime from /proc/<pid>/stat is sampled over
# ROUNDS windows of WINDOW seconds; median and min–max are printed as % of one core.
# Afterwards `telering top --json` (same polling code) reports the events the view
# missed and the rates it measured.
#
#   cargo build --release -p telering-cli --bin telering
#   cargo build --release -p telering-benches --example top_load
#   benches/top_cpu.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/target/release/telering
load=$root/target/release/examples/top_load
rings=${RINGS:-64}
rate=${RATE:-10000}
rounds=${ROUNDS:-7}
window=${WINDOW:-5}
dir=$(mktemp -d)
sock=telering-top-bench-$$
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    [ -n "${loadpid:-}" ] && kill "$loadpid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

"$load" "$dir" "$rings" "$rate" $((rounds * window + 30)) >"$dir.load.txt" &
loadpid=$!
until [ "$(find "$dir" -maxdepth 1 -type f ! -name '.*' | wc -l)" -ge "$rings" ]; do sleep 0.1; done

tmux -L "$sock" new-session -d -x 220 -y 80 "exec $bin top --interval 1s $dir"
pid=$(tmux -L "$sock" list-panes -F '#{pane_pid}')
cpu_ticks() { awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
sleep 3 # warm-up: the view has opened every ring and drawn its first screens
results=()
for r in $(seq "$rounds"); do
    t0=$(date +%s.%N); c0=$(cpu_ticks "$pid")
    sleep "$window"
    t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
    pct=$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)
    results+=("$pct")
    printf 'round %d: %.2f %% of one core\n' "$r" "$pct"
done
printf '%s\n' "${results[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    printf "telering top, %s rings x %s events/s, 1 s interval: median %.2f %% (min %.2f, max %.2f) of one core over %d rounds\n",
        "'"$rings"'", "'"$rate"'", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
json=$("$bin" top --json --interval 3s "$dir")
echo "$json" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
missed = sum(r["events_missed"] for r in rows)
rates = sorted(r["events_per_s"] for r in rows)
print(f"--json over 3 s: {len(rows)} rings, events/s per ring min {rates[0]:.0f} median {rates[len(rates)//2]:.0f} max {rates[-1]:.0f}, events missed by the view: {missed}")
'
tmux -L "$sock" send-keys q
wait "$loadpid" || true
cat "$dir.load.txt"; rm -f "$dir.load.txt"
