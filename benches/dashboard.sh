#!/usr/bin/env bash
# `telering serve`'s dashboard and `telering top --prometheus` at 1, 64 and 1000
# agents (examples/top_load.rs writes each ring at RATE events/s):
# - the size of /api/agents: the page's default request (25 agents) and all agents;
# - its answer time (curl's time_total);
# - the page's load time as the browser measures it: navigation start to the first
#   agents drawn (`data-first-render-ms`, headless chromium), for the default page of
#   25 agents and, at 1000 agents, a page of 100;
# - serve's CPU (utime+stime) over WINDOW seconds, with nobody watching the dashboard
#   and while a client asks for /api/agents every second (JSON rebuilt after the poll that follows each request);
# - at 1000 agents, a real Prometheus scraping serve every second and the wall time of
#   `telering top --prometheus URL --once --json`.
# Each figure: median and min–max over ROUNDS rounds.
#
#   cargo build --release -p telering-cli --bin telering
#   cargo build --release -p telering-benches --example top_load
#   benches/dashboard.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/target/release/telering
load=$root/target/release/examples/top_load
rounds=${ROUNDS:-7}
rate=${RATE:-100}
window=${WINDOW:-5}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

stats() { # label unit values...
    local label=$1 unit=$2; shift 2
    printf '%s\n' "$@" | sort -g | awk -v l="$label" -v u="$unit" '{ v[NR] = $1 } END {
        printf "%-58s median %8.2f %s (min %.2f, max %.2f), %d rounds\n", l, v[int((NR + 1) / 2)], u, v[1], v[NR], NR }'
}
cpu_ticks() { awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
first_render() { # url -> ms
    chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=1500 --dump-dom "$1" 2>/dev/null \
        | grep -o 'data-first-render-ms="[0-9.]*"' | head -1 | grep -o '[0-9.]*'
}

for n in ${AGENTS:-1 64 1000}; do
    dir=$(mktemp -d)
    "$load" "$dir" "$n" "$rate" 600 >/dev/null &
    pids+=($!)
    until [ "$(find "$dir" -maxdepth 1 -type f ! -name '.*' | wc -l)" -ge "$n" ]; do sleep 0.1; done
    "$bin" serve --dir "$dir" --port 0 --local >"$dir.serve.txt" &
    serve=$!
    pids+=($serve)
    until grep -q serving "$dir.serve.txt" 2>/dev/null; do sleep 0.1; done
    addr=$(grep -o '127.0.0.1:[0-9]*' "$dir.serve.txt" | head -1)
    until curl -s "http://$addr/api/agents" | grep -q "\"agents_total\":$n,"; do sleep 0.2; done
    echo "== $n agents (serve on $addr)"
    echo "/api/agents bytes: default page $(curl -s "http://$addr/api/agents?limit=25" | wc -c), all $(curl -s "http://$addr/api/agents?limit=1000" | wc -c); /metrics bytes $(curl -s "http://$addr/metrics" | wc -c)"
    t=(); for r in $(seq "$rounds"); do t+=("$(curl -s -o /dev/null -w '%{time_total}' "http://$addr/api/agents?limit=1000" | awk '{ print $1 * 1000 }')"); done
    stats "$n agents: /api/agents?limit=1000 answer" ms "${t[@]}"
    t=(); for r in $(seq "$rounds"); do t+=("$(first_render "http://$addr/")"); done
    stats "$n agents: page load to first agents drawn (25 shown)" ms "${t[@]}"
    if [ "$n" -ge 100 ]; then
        t=(); for r in $(seq "$rounds"); do t+=("$(first_render "http://$addr/?limit=100")"); done
        stats "$n agents: page load to first agents drawn (100 shown)" ms "${t[@]}"
    fi
    serve_cpu() { # label
        local t=() r t0 t1 c0 c1
        for r in $(seq "$rounds"); do
            t0=$(date +%s.%N); c0=$(cpu_ticks "$serve"); sleep "$window"
            t1=$(date +%s.%N); c1=$(cpu_ticks "$serve")
            t+=("$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)")
        done
        stats "$n agents: serve CPU, $1" "%" "${t[@]}"
    }
    serve_cpu "dashboard not watched"
    (while true; do curl -s -o /dev/null "http://$addr/api/agents?limit=25"; sleep 1; done) &
    watcher=$!
    pids+=($watcher)
    serve_cpu "dashboard watched (1 request/s)"
    kill "$watcher"
    if [ "$n" -eq 1000 ]; then
        pdir=$(mktemp -d)
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [%s]\n' "'$addr'" >"$pdir/p.yml"
        prometheus --config.file="$pdir/p.yml" --storage.tsdb.path="$pdir/data" \
            --web.listen-address="127.0.0.1:$port" >/dev/null 2>&1 &
        pids+=($!)
        until [ "$("$bin" top --once --json --prometheus "http://127.0.0.1:$port" 2>/dev/null | wc -l)" -ge "$n" ]; do sleep 0.5; done
        sleep 3 # two scrapes more, so that every irate() has its two samples
        t=(); for r in $(seq "$rounds"); do
            s=$(date +%s%N)
            rows=$("$bin" top --once --json --prometheus "http://127.0.0.1:$port" | wc -l)
            t+=("$(( ($(date +%s%N) - s) / 1000000 ))")
            [ "$rows" -eq "$n" ] || echo "round $r: $rows rows"
        done
        stats "$n agents: top --prometheus --once --json refresh" ms "${t[@]}"
    fi
    kill "$serve" 2>/dev/null || true
done
