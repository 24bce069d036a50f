#!/usr/bin/env bash
# Interleaved A/B timing of `xqtb solve` from an empty store, the way BENCHMARKS.md compares
# builds on a noisy machine: A B A B ..., one line per run with CPU seconds (user + system),
# wall seconds and peak RSS from /proc (the binary reports them itself), then the medians.
#   scripts/ab-solve.sh A_BINARY B_BINARY RUNS SIGNATURE [solve args...]
# A_ARGS and B_ARGS add arguments to one side only, e.g. to compare rule sets with one binary:
#   A_ARGS="--rules cycles-are-draws" B_ARGS="--rules asian" scripts/ab-solve.sh X X 3 KRNvKR
# DEPS=DIR starts every run from a copy of the store DIR (its dependencies solved already), so
# that only SIGNATURE is solved.
set -euo pipefail
a=${1:?usage: ab-solve.sh A B RUNS SIGNATURE [args...]}
b=${2:?}
runs=${3:?}
sig=${4:?}
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
  for which in A B; do
    bin=$a; extra=${A_ARGS:-}
    [ "$which" = B ] && bin=$b && extra=${B_ARGS:-}
    rm -rf "$tmp/data"
    [ -n "${DEPS:-}" ] && cp -a "$DEPS" "$tmp/data"
    line=$("$bin" solve "$sig" --threads 2 --data "$tmp/data" "$@" $extra 2>/dev/null | grep '^all done')
    cpu=$(sed -n 's/.* \([0-9.]*\) s CPU.*/\1/p' <<<"$line")
    wall=$(sed -n 's/all done: \([0-9.]*\) s wall.*/\1/p' <<<"$line")
    peak=$(sed -n 's/.*peak memory \([0-9.]*\) MB.*/\1/p' <<<"$line")
    echo "$which run $i: cpu $cpu s, wall $wall s, peak $peak MB"
    echo "$which $cpu $wall $peak" >> "$tmp/all"
  done
done
for which in A B; do
  awk -v w="$which" '$1 == w { print $2 }' "$tmp/all" | sort -n |
    awk -v w="$which" '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s median CPU %.1f s over %d runs\n", w, m, NR }'
done
