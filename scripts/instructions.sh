#!/usr/bin/env bash
# Instructions executed by `xqtb solve` from an empty store, counted by callgrind: unlike CPU
# seconds on a shared machine, the count repeats for the same binary and input, so it can
# tell apart changes of a few percent (BENCHMARKS.md, "Counting instructions"). Threads are
# counted apart and only those that ran solver code are summed: sled's background threads spin
# for a varying number of instructions. One solver thread, so that rayon's workers do not spin.
#   scripts/instructions.sh BINARY SIGNATURE [solve args...]
# Prints the total, then the inclusive counts of the rule phase's and the verifier's main
# functions. Needs valgrind, under which a solve runs many times slower: small closures suit it.
set -euo pipefail
bin=${1:?usage: instructions.sh BINARY SIGNATURE [args...]}
sig=${2:?}
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/out" \
  "$bin" solve "$sig" --threads 1 --data "$tmp/data" "$@" > "$tmp/log" 2>&1
count() { awk '{ gsub(",", "", $1); print $1; exit }'; }
ours=()
total=0
others=0
for f in "$tmp"/out-*; do
  n=$(callgrind_annotate --auto=no "$f" 2>/dev/null | grep 'PROGRAM TOTALS' | count)
  if grep -q 'solver::' "$f"; then
    ours+=("$f")
    total=$((total + n))
  else
    others=$((others + n))
  fi
done
annotate() { callgrind_annotate --inclusive=yes --auto=no "${ours[@]}" 2>/dev/null | grep -v '=>'; }
echo "$sig $*: $((total / 1000000)) M instructions (other threads, left out: $((others / 1000000)) M)"
for f in 'asian::Phase::mark_forced::{{closure}}' 'asian::search::trap_round' \
  'asian::levels::run' 'repetition::Classifier::class' 'verify_rules::check' \
  'verify_rules::forced_to_offend'; do
  n=$(annotate | grep -F "$f" | grep -F '[' | count || true)
  [ -n "$n" ] && echo "  $f: $(( n / 1000000 )) M"
done
