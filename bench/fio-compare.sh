#!/usr/bin/env bash
# Interleaved comparison of `zerohop bench read` with fio on the same file.
#
#   bench/fio-compare.sh [FILE] [SIZE] [REPEATS] [SECONDS]
#
# Defaults: /var/tmp/zerohop-bench/data, 4G, 5 repeats, 10 s per run. The file
# is written with `zerohop bench prepare` when missing (delete it afterwards).
# Cases: sequential 1 MiB reads at iodepth 32 with O_DIRECT through io_uring
# with 1 and 2 workers and 4 KiB random reads at iodepth 64, each time-based;
# then one cold pass over the file through the page cache (buffered) and one
# with O_DIRECT, to show what the page-cache hop costs on the same data. The
# page cache is dropped before every cold pass (as root; otherwise zerohop's
# `--cache drop` and fio's `invalidate=1` drop the file's clean pages).
# zerohop and fio alternate within each repeat (the order flips every
# repeat); the script prints the median of each figure and the ratio
# zerohop / fio, with the range of the per-repeat ratios. ONLY=name,name
# runs just those cases. Needs fio, python3 and a release build
# (cargo build --release -p zerohop) or ZEROHOP=/path/to/zerohop.
set -euo pipefail

FILE=${1:-/var/tmp/zerohop-bench/data}
SIZE=${2:-4G}
REPEATS=${3:-5}
SECONDS_PER_RUN=${4:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZEROHOP=${ZEROHOP:-$ROOT/target/release/zerohop}
OUT=${OUT:-$(mktemp -d /tmp/zerohop-fio-compare.XXXXXX)}

command -v fio >/dev/null || { echo "error: fio is not installed (apt-get install fio)" >&2; exit 2; }
[ -x "$ZEROHOP" ] || { echo "error: $ZEROHOP not found; run cargo build --release -p zerohop" >&2; exit 2; }
mkdir -p "$(dirname "$FILE")" "$OUT"
if [ ! -f "$FILE" ]; then
    "$ZEROHOP" bench prepare "$FILE" --size "$SIZE" >&2
fi

# Starts a pass cold in this machine's page cache, the same for both tools.
# Measured on a VM: the first buffered pass after the random-read case ran
# at a quarter of the speed of the next one, whichever tool came first. One
# buffered read of the whole file before the cache is dropped puts the
# guest and the host in the same state before every pass.
drop_caches() {
    cat "$FILE" > /dev/null
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

# zerohop_run NAME MODE ARGS... / fio_run NAME MODE ARGS...: one run, JSON
# kept in $OUT. MODE `timed` runs for SECONDS; `pass` reads the file once, cold.
zerohop_run() {
    local name=$1 mode=$2; shift 2
    local amount=(--time "$SECONDS_PER_RUN")
    if [ "$mode" = pass ]; then drop_caches; amount=(); fi
    "$ZEROHOP" bench read "$FILE" "${amount[@]}" --format json "$@" > "$OUT/$name.zerohop.$rep.json"
}
fio_run() {
    local name=$1 mode=$2; shift 2
    local amount=(--time_based --runtime="$SECONDS_PER_RUN")
    if [ "$mode" = pass ]; then drop_caches; amount=(); fi
    fio --name="$name" --filename="$FILE" --ioengine=io_uring "${amount[@]}" \
        --output-format=json "$@" > "$OUT/$name.fio.$rep.json"
}

# CASE NAME | mode | zerohop args | fio args
CASES=(
    "seq1m_1w|timed|--direct --bs 1M --qd 32 --workers 1|--rw=read --direct=1 --bs=1M --iodepth=32 --numjobs=1"
    "seq1m_2w|timed|--direct --bs 1M --qd 32 --workers 2|--rw=read --direct=1 --bs=1M --iodepth=32 --numjobs=2"
    "rand4k_qd64|timed|--direct --bs 4K --qd 64 --pattern rand|--rw=randread --direct=1 --bs=4k --iodepth=64 --numjobs=1"
    "buffered1m_pass|pass|--bs 1M --qd 32 --cache drop|--rw=read --direct=0 --invalidate=1 --bs=1M --iodepth=32 --numjobs=1"
    "direct1m_pass|pass|--direct --bs 1M --qd 32|--rw=read --direct=1 --bs=1M --iodepth=32 --numjobs=1"
)

if [ -n "${ONLY:-}" ]; then
    selected=()
    for case in "${CASES[@]}"; do
        [[ ",$ONLY," == *",${case%%|*},"* ]] && selected+=("$case")
    done
    [ ${#selected[@]} -gt 0 ] || { echo "error: ONLY=$ONLY names no case" >&2; exit 2; }
    CASES=("${selected[@]}")
fi
NAMES=$(for case in "${CASES[@]}"; do printf '%s ' "${case%%|*}"; done)

for rep in $(seq 1 "$REPEATS"); do
    for case in "${CASES[@]}"; do
        IFS='|' read -r name mode zargs fargs <<< "$case"
        # shellcheck disable=SC2086 # the argument lists are meant to split
        if [ $((rep % 2)) -eq 1 ]; then
            zerohop_run "$name" "$mode" $zargs; fio_run "$name" "$mode" $fargs
        else
            fio_run "$name" "$mode" $fargs; zerohop_run "$name" "$mode" $zargs
        fi
        echo "repeat $rep $name done" >&2
    done
done

python3 - "$OUT" "$REPEATS" "$NAMES" <<'PY'
import json, statistics, sys
out, repeats, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def zerohop(path):
    d = json.load(open(path))
    cpu = d["cpu_user_s"] + d["cpu_sys_s"]
    return d["bw_bytes_per_s"], d["iops"], cpu / (d["bytes"] / 1e9), d["latency_us"]["p99"]

def fio(path):
    d = json.load(open(path))
    bw = iops = cpu = nbytes = 0.0
    p99 = 0.0
    for job in d["jobs"]:
        r = job["read"]
        bw += r["bw_bytes"]; iops += r["iops"]; nbytes += r["io_bytes"]
        # usr_cpu and sys_cpu are percentages of the job's runtime.
        cpu += (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0
        p99 = max(p99, r["clat_ns"]["percentile"].get("99.000000", 0) / 1000.0)
    return bw, iops, cpu / (nbytes / 1e9), p99

print("| case | zerohop MiB/s | fio MiB/s | bw ratio | per-repeat bw ratios | zerohop IOPS | fio IOPS | IOPS ratio | zerohop CPU s/GB | fio CPU s/GB | CPU ratio | zerohop p99 µs | fio p99 µs |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for case in cases:
    z = [zerohop(f"{out}/{case}.zerohop.{r}.json") for r in range(1, repeats + 1)]
    f = [fio(f"{out}/{case}.fio.{r}.json") for r in range(1, repeats + 1)]
    med = lambda rows, i: statistics.median(row[i] for row in rows)
    zb, fb = med(z, 0), med(f, 0)
    zi, fi = med(z, 1), med(f, 1)
    zc, fc = med(z, 2), med(f, 2)
    ratios = [zr[0] / fr[0] for zr, fr in zip(z, f)]
    spread = f"{min(ratios):.3f}–{max(ratios):.3f}"
    print(f"| {case} | {zb/2**20:.1f} | {fb/2**20:.1f} | {zb/fb:.3f} | {spread} | {zi:.0f} | {fi:.0f} | {zi/fi:.3f} | {zc:.3f} | {fc:.3f} | {zc/fc:.3f} | {med(z,3):.0f} | {med(f,3):.0f} |")
print(f"\nraw JSON in {out}")
PY
