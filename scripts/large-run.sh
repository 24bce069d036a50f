#!/bin/bash
# A cluster run of a whole closure on this machine next to `xqtb plan`'s prediction for it: a
# coordinator and WORKERS workers of THREADS threads each (separate processes, so that each
# worker's per-job peak memory is its own), every job's wall time, CPU time and peak memory
# against its estimate, and the makespan against the simulated one.
#
#   scripts/large-run.sh KRPvKNP            # BENCHMARKS.md's large run (2.1e9 entries, 49 slices)
#   WORKERS=1 THREADS=2 scripts/large-run.sh KRNvKR
#
# Leaves the logs and the report in $OUT (default /tmp/large-run.<table>); the stores are
# removed unless KEEP=1.
set -euo pipefail
SIG=${1:?usage: $0 SIGNATURE [coordinator flags...]}
shift
B=${B:-./target/release/xqtb}
WORKERS=${WORKERS:-2}
THREADS=${THREADS:-1}
MEMORY=${MEMORY:-8GiB}
PORT=${PORT:-7392}
OUT=${OUT:-/tmp/large-run.$SIG}
rm -rf "$OUT"
mkdir -p "$OUT"
echo "run of $SIG: $WORKERS workers x $THREADS threads, --memory $MEMORY, logs in $OUT"
$B plan "$SIG" --workers "$WORKERS" --threads "$THREADS" --memory "$MEMORY" "$@" --json > "$OUT/plan.json"
$B --log-format json coordinator --listen 127.0.0.1:$PORT --data "$OUT/coord" --plan "$SIG" "$@" \
  > "$OUT/coordinator.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  grep -q 'listening' "$OUT/coordinator.log" 2>/dev/null && break
  sleep 0.2
done
start=$(date +%s.%N)
WP=()
for i in $(seq "$WORKERS"); do
  /usr/bin/time -v -o "$OUT/worker$i.time" $B --log-format json worker \
    --coordinator http://127.0.0.1:$PORT --name "w$i" --cache "$OUT/cache$i" \
    --threads "$THREADS" --memory "$MEMORY" --exit-when-done > "$OUT/worker$i.log" 2>&1 &
  WP+=($!)
done
for p in "${WP[@]}"; do wait "$p"; done
end=$(date +%s.%N)
echo "$start $end" > "$OUT/makespan"
grep -h "VmHWM\|Maximum resident" /proc/$CP/status "$OUT"/worker*.time 2>/dev/null || true
grep VmHWM /proc/$CP/status > "$OUT/coordinator.peak" || true
kill $CP
wait $CP 2>/dev/null || true
trap - EXIT
python3 - "$OUT" <<'EOF'
import json, sys, glob, datetime
out = sys.argv[1]
def lines(path):
    for l in open(path):
        try:
            yield json.loads(l)
        except ValueError:
            pass
def ts(e):
    return datetime.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
plan = json.load(open(f"{out}/plan.json"))
start, end = map(float, open(f"{out}/makespan").read().split())
leased, committed = {}, {}
for e in lines(f"{out}/coordinator.log"):
    f = e.get("fields", {})
    if f.get("message") == "job leased":
        leased[f["job"]] = (ts(e), f["worker"])
    elif f.get("message") == "table committed":
        committed[f["job"]] = ts(e)
done = {}
for path in sorted(glob.glob(f"{out}/worker*.log")):
    for e in lines(path):
        f = e.get("fields", {})
        if f.get("message") == "job done":
            done[f["job"]] = f
rows, mem_err, cpu_sum, est_cpu_sum = [], [], 0.0, 0.0
# est MB: the plan's estimate counted from what the worker held when the job started (start MB),
# as the coordinator matches a job with a worker.
print(f"{'job':44} {'worker':6} {'wall s':>7} {'cpu s':>7} {'est cpu':>7} {'start MB':>8} {'peak MB':>8} {'est MB':>7} {'mem err':>7}")
for job, f in sorted(done.items(), key=lambda kv: committed.get(kv[0], 0)):
    peak, est = f.get("peak_memory_bytes"), f["estimated_memory_bytes"]
    err = (est - peak) / peak * 100 if peak else float("nan")
    mem_err.append((err, job))
    cpu_sum += f.get("cpu_seconds") or 0
    est_cpu_sum += f["estimated_cpu_seconds"]
    print(f"{job:44} {leased.get(job, (0, '?'))[1]:6} {f['wall_seconds']:7.1f} {f.get('cpu_seconds') or 0:7.1f} "
          f"{f['estimated_cpu_seconds']:7.1f} {(f.get('memory_at_start_bytes') or 0) / 1e6:8.1f} "
          f"{peak / 1e6 if peak else 0:8.1f} {est / 1e6:7.1f} {err:+6.1f}%")
sim = plan.get("simulation", {})
pred = sim.get("makespan_seconds")
meas = end - start
print(f"jobs: {len(done)}; makespan {meas / 60:.1f} min measured, {pred / 60 if pred else float('nan'):.1f} min predicted "
      f"({(pred - meas) / meas * 100 if pred else float('nan'):+.1f}% predicted over measured)")
print(f"CPU of the jobs: {cpu_sum / 60:.1f} min measured, {est_cpu_sum / 60:.1f} min estimated")
big = [m for m in mem_err if done[m[1]].get("estimated_memory_bytes", 0) > 100e6]
print(f"memory estimate over measured peak, every job: {min(mem_err)[0]:+.1f}% .. {max(mem_err)[0]:+.1f}%")
if big:
    print(f"memory estimate over measured peak, jobs above 100 MB: {min(big)[0]:+.1f}% .. {max(big)[0]:+.1f}%")
by_worker = {}
for job, (_, w) in leased.items():
    if "slots" in job:
        by_worker.setdefault(w, set()).add(job)
print("slices solved per worker:", {w: len(j) for w, j in by_worker.items()})
EOF
[ "${KEEP:-0}" = 1 ] || rm -rf "$OUT/coord" "$OUT"/cache*
