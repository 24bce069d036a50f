#!/usr/bin/env bash
# Prints the SHA-256 of the exported shard file of every table of a set, one line per table,
# so two builds can be compared byte for byte:
#   scripts/shard-digests.sh BINARY reference > a.txt   # the 36 reference-solver tables
#   scripts/shard-digests.sh BINARY krnvkr > b.txt      # the KRNvKR closure (slower)
#   scripts/shard-digests.sh BINARY rules > c.txt       # tables with several rule rounds and
#                                                       # pawn slices (slowest)
# Extra arguments after the set are passed to `xqtb solve` (for example `--rules asian`).
set -euo pipefail
bin=${1:?usage: shard-digests.sh BINARY reference|krnvkr|rules [solve args...]}
set_name=${2:?usage: shard-digests.sh BINARY reference|krnvkr|rules [solve args...]}
shift 2
case "$set_name" in
  reference)
    sigs="KRvK KNvK KCvK KPvK KRvKA KNvKA KCvKA KPvKA KRvKB KNvKB KCvKB KPvKB KRvKAA KNvKAA
      KCvKAA KPvKAA KRvKBB KNvKBB KCvKBB KPvKBB KRvKAB KNvKAB KCvKAB KPvKAB KRvKR KRvKN KRvKC
      KRvKP KNvKN KCvKC KPvKP KRNvK KRCvK KNNvK KCPvK KPPvK" ;;
  krnvkr) sigs="KRNvKR" ;;
  rules) sigs="KCAvKN KNvKP KCvKC KRPvKR" ;;
  *) echo "unknown set $set_name" >&2; exit 2 ;;
esac
# The rule set given to `solve` is also the one to list and export.
rules=()
prev=
for a in "$@"; do
  [ "$prev" = --rules ] && rules=(--rules "$a")
  prev=$a
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# shellcheck disable=SC2086
"$bin" solve $sigs --data "$dir/data" "$@" >/dev/null
mkdir -p "$dir/shards"
"$bin" tables --json --data "$dir/data" | sed -n 's/.*"table":"\([A-Za-z]*\)".*/\1/p' | while read -r t; do
  "$bin" export "$t" -o "$dir/shards/$t.xqtb" --data "$dir/data" "${rules[@]}" >/dev/null
  printf '%s  %s\n' "$(sha256sum "$dir/shards/$t.xqtb" | cut -d' ' -f1)" "$t"
done
