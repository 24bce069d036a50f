#!/usr/bin/env bash
# CPU seconds and peak RSS of each phase of `xqtb solve`, the way BENCHMARKS.md splits the asian
# rule set's cost ("Where the CPU and the peak go, per phase"): the process's user + system time
# (/proc/PID/stat) and resident set (/proc/PID/status) are sampled every 0.2 s and split at the
# solver's log lines, so a phase shorter than a sample or two is not resolved.
#   scripts/phase-cpu.sh BINARY SIGNATURE [solve args...]
# DEPS=DIR starts from a copy of the store in DIR (e.g. the dependencies solved before, to
# measure one table alone). Prints, per log line: wall and CPU seconds since the line before, the
# largest RSS seen in between, and the line.
set -euo pipefail
bin=${1:?usage: phase-cpu.sh BINARY SIGNATURE [args...]}
sig=${2:?}
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${DEPS:-}" ]; then
  cp -r "$DEPS" "$tmp/data"
fi
tick=$(getconf CLK_TCK)
RUST_LOG=solver=debug,info NO_COLOR=1 "$bin" solve "$sig" --threads 2 --data "$tmp/data" "$@" \
  > "$tmp/out" 2> "$tmp/log" &
pid=$!
# Sample lines: seconds since the epoch, CPU ticks, RSS in kB.
while kill -0 "$pid" 2>/dev/null; do
  if stat=$(cat "/proc/$pid/stat" 2>/dev/null) && rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null); then
    echo "$(date +%s.%N) $(awk '{ print $14 + $15 }' <<<"$stat") $rss"
  fi
  sleep 0.2
done > "$tmp/samples"
wait "$pid" || { echo "xqtb solve failed; its log:" >&2; cat "$tmp/log" >&2; exit 1; }
# Log lines as seconds since the epoch (from their UTC timestamps) and text.
while IFS= read -r line; do
  if [[ $line =~ ^([0-9-]+T[0-9:.]+Z)[[:space:]]+[A-Z]+[[:space:]]+[^[:space:]]+:[[:space:]](.*)$ ]]; then
    echo "$(date -u -d "${BASH_REMATCH[1]}" +%s.%N) ${BASH_REMATCH[2]}"
  fi
done < "$tmp/log" > "$tmp/events"
awk -v tick="$tick" '
  FNR == NR { t[NR] = $1; cpu[NR] = $2 / tick; rss[NR] = $3; n = NR; next }
  FNR == 1 { prev = t[1]; pc = 0 }
  {
    at = $1; $1 = ""
    c = pc; peak = 0
    for (i = 1; i <= n && t[i] <= at; i++) {
      c = cpu[i]
      if (t[i] >= prev && rss[i] > peak) peak = rss[i]
    }
    printf "%7.2f s wall %7.2f s CPU %9s %s\n", at - prev, c - pc, mb(peak), $0
    prev = at; pc = c
  }
  END {
    peak = 0
    for (i = 1; i <= n; i++) if (t[i] >= prev && rss[i] > peak) peak = rss[i]
    printf "%7.2f s wall %7.2f s CPU %9s (after the last line)\n", t[n] - prev, cpu[n] - pc, mb(peak)
    printf "total %.2f s CPU\n", cpu[n]
  }
  # RSS in kB as MB of 10^6 bytes; "-" when no sample fell in the interval.
  function mb(kb) { return kb > 0 ? sprintf("%.1f MB", kb * 1.024 / 1000) : "-" }
  ' "$tmp/samples" "$tmp/events"
tail -1 "$tmp/out"
