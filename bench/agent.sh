#!/usr/bin/env bash
# The agent's cost on a large host: CPU share at the default interval,
# /metrics latency under scrapes while passes run, and resident memory over
# many passes.
#
#   bench/agent.sh TREE [cpu|scrape|rss|all]
#
# TREE is a host tree, normally the synthetic large host of the doctor's
# full_pass bench, kept with
#   ZEROHOP_BENCH_TREE=/dev/shm/zh-rdma cargo bench -p zerohop-doctor --bench full_pass
# (2,080 PCI functions, 2,064 RDMA devices and netdevs; add
# ZEROHOP_BENCH_RDMA=0 for the PCI-only host).
#
# cpu:    the agent at its defaults (--interval 5m, --counters-interval 30s)
#         for CPU_SECONDS (default 900) of wall time; CPU share = the
#         process's user + system time / wall time, from /proc/PID/stat.
# scrape: the agent with --interval 2s --counters-interval 1s (a pass
#         running or about to, with the counters sampled meanwhile), then
#         SCRAPES (default 10000) GET /metrics from the scrape bench, a second
#         process, GAP_US (default 500) microseconds apart so that they span
#         several passes; prints median, p99 and max, and the passes that
#         completed during the scrapes.
# rss:    the agent with --interval RSS_INTERVAL (default 1s)
#         --counters-interval 1s until PASSES (default 1000) passes
#         completed; every 10 s prints the passes completed and started
#         (a pass longer than the interval is cut at it and not completed:
#         on a loaded machine pick an interval that lets passes complete),
#         the agent's VmRSS, and the proportional set size (Pss) of the
#         agent and of its reader processes together, which is what the
#         pod's memory holds; then first, last and highest VmRSS.
#
# The agent runs at the scheduling priority NICE (default 0; a negative one,
# as root, keeps a shared machine's other work from cutting its passes).
# It serves on 127.0.0.1:PORT (default 19477) and publishes nothing
# to a cluster (no --node-condition, --report-object or --features-dir).
# Needs a release build (cargo build --release -p zerohop) or ZEROHOP=path.
set -euo pipefail

TREE=${1:?usage: bench/agent.sh TREE [cpu|scrape|rss|all]}
WHAT=${2:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZEROHOP=${ZEROHOP:-$ROOT/target/release/zerohop}
PORT=${PORT:-19477}
CPU_SECONDS=${CPU_SECONDS:-900}
SCRAPES=${SCRAPES:-10000}
PASSES=${PASSES:-1000}
TICKS=$(getconf CLK_TCK)

[ -x "$ZEROHOP" ] || { echo "error: $ZEROHOP not found; run cargo build --release -p zerohop" >&2; exit 2; }
[ -d "$TREE" ] || { echo "error: $TREE is not a directory" >&2; exit 2; }

agent_pid=
stop_agent() {
    if [ -n "$agent_pid" ]; then
        kill "$agent_pid" 2>/dev/null || true
        wait "$agent_pid" 2>/dev/null || true
        agent_pid=
    fi
}
trap stop_agent EXIT

start_agent() {
    nice -n "${NICE:-0}" "$ZEROHOP" agent --root "$TREE" --listen "127.0.0.1:$PORT" "$@" 2>/dev/null &
    agent_pid=$!
    # Ready once the first pass is published.
    for _ in $(seq 1 600); do
        if curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null; then
            return
        fi
        sleep 0.1
    done
    echo "error: the agent did not become ready" >&2
    exit 1
}

# user + system CPU time of the agent, in clock ticks.
cpu_ticks() {
    # Fields 14 and 15 of /proc/PID/stat, after the parenthesised name.
    sed 's/.*) //' "/proc/$agent_pid/stat" | awk '{ print $12 + $13 }'
}

completed_passes() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk '/^zerohop_passes_total\{.*outcome="completed"/ { print $2 }'
}

started_passes() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk '/^zerohop_passes_total\{/ { sum += $2 } END { print sum + 0 }'
}

rss_kib() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$agent_pid/status"
}

# Pss of the agent and its reader processes (its children), in KiB.
pss_kib() {
    local pids
    pids="$agent_pid $(cat /proc/"$agent_pid"/task/*/children 2>/dev/null)"
    for pid in $pids; do
        awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null
    done | awk '{ sum += $1 } END { print sum + 0 }'
}

cpu() {
    start_agent
    local start_ticks end_ticks start end
    start_ticks=$(cpu_ticks)
    start=$(date +%s.%N)
    sleep "$CPU_SECONDS"
    end_ticks=$(cpu_ticks)
    end=$(date +%s.%N)
    python3 - "$start_ticks" "$end_ticks" "$start" "$end" "$TICKS" "$(completed_passes)" <<'EOF'
import sys
t0, t1, w0, w1, hz, passes = sys.argv[1:]
cpu = (int(t1) - int(t0)) / int(hz)
wall = float(w1) - float(w0)
print(f"cpu: {cpu:.2f} s of CPU in {wall:.0f} s at the default interval "
      f"({passes} passes since start): {100 * cpu / wall:.3f} % of one core")
EOF
    stop_agent
}

scrape() {
    start_agent --interval 2s --counters-interval 1s
    local before
    before=$(completed_passes)
    ZEROHOP_SCRAPE_ADDR="127.0.0.1:$PORT" ZEROHOP_SCRAPES="$SCRAPES" ZEROHOP_SCRAPE_GAP_US="${GAP_US:-500}" \
        cargo bench --manifest-path "$ROOT/Cargo.toml" -q -p zerohop-agent --bench scrape
    echo "scrape: passes completed during the scrapes: $(($(completed_passes) - before))"
    stop_agent
}

rss() {
    start_agent --interval "${RSS_INTERVAL:-1s}" --counters-interval 1s
    local first passes now highest=0
    first=$(rss_kib)
    while :; do
        passes=$(completed_passes)
        now=$(rss_kib)
        [ "$now" -gt "$highest" ] && highest=$now
        echo "rss: $passes passes completed of $(started_passes), VmRSS $now KiB, Pss with readers $(pss_kib) KiB"
        [ "${passes%.*}" -ge "$PASSES" ] && break
        sleep 10
    done
    echo "rss: first $first KiB, after $passes passes $now KiB, highest $highest KiB"
    stop_agent
}

case $WHAT in
cpu) cpu ;;
scrape) scrape ;;
rss) rss ;;
all) cpu; scrape; rss ;;
*) echo "error: $WHAT is not cpu, scrape, rss or all" >&2; exit 2 ;;
esac
