#!/bin/bash
# One table solved by W workers sharing it through a real coordinator on this machine, timed:
#   scripts/share-cluster.sh BIN DEPS SIGNATURE W [OUT]
# BIN: an xqtb binary; DEPS: a store (`xqtb solve --data DEPS ...`) holding the table's
# dependencies under cycles-are-draws, copied as the coordinator's data; OUT (default
# /tmp/share-cluster): where the logs go. Every worker registers before the table is submitted,
# so that it is shared by all W. Prints the wall time, each process's wall, CPU and peak RSS
# (/usr/bin/time), and the downloaded shard's SHA-256.
# SHARE_BY=N shares by N instead of W (1: the W workers solve the jobs alone, a baseline);
# COORDINATOR_ARGS adds coordinator flags (e.g. "--slice-from-entries 0" for pawn slices),
# WORKER_ARGS worker flags (e.g. "--memory 1GB" to hold each worker to a seat's estimate).
# RESTART_AT_LEVEL=N kills the coordinator (SIGKILL) once a shared job's last pass reaches level
# N and starts it again on the same data (its log goes to coord2.log): the seats resume.
set -euo pipefail
B=$(realpath "$1"); DEPS=$2; SIG=$3; W=$4; OUT=${5:-/tmp/share-cluster}
PORT=$((7400 + W))
SERVER=http://127.0.0.1:$PORT
rm -rf "$OUT"; mkdir -p "$OUT"; cp -r "$DEPS" "$OUT/coord"; cd "$OUT"
coordinator() { # LOG
  RUST_LOG=info NO_COLOR=1 /usr/bin/time -f "coordinator %e s wall %U+%S s cpu %M KB" \
    "$B" coordinator --listen 127.0.0.1:$PORT --data coord --rules cycles-are-draws \
    --share-by "${SHARE_BY:-$W}" --share-from-entries 1 --lease-ttl-secs 60 --sample-percent 0.1 \
    ${COORDINATOR_ARGS:-} \
    > coord.out 2> "$1" &
}
coordinator coord.log
sleep 2
for i in $(seq 1 "$W"); do
  RUST_LOG=info NO_COLOR=1 /usr/bin/time -f "worker$i %e s wall %U+%S s cpu %M KB" \
    "$B" worker --coordinator $SERVER --cache cache$i --name s$i --threads 1 ${WORKER_ARGS:-} > w$i.out 2> w$i.log &
done
sleep 3
start=$(date +%s.%N)
"$B" submit "$SIG" --rules cycles-are-draws --server $SERVER > submit.out
restart=${RESTART_AT_LEVEL:-}
until "$B" status --server $SERVER > status.txt 2>&1 && grep -q "^  $SIG  *finished" status.txt; do
  grep -A1 "^  $SIG " status.txt >> status.log || true
  if [ -n "$restart" ]; then
    level=$(grep -o "last pass [a-z]* [0-9]*" status.txt | grep -o "[0-9]*$" || echo 0)
    if [ "${level:-0}" -ge "$restart" ]; then
      echo "$(date +%s.%N) restarting the coordinator at $(grep -o 'last pass [a-z]* [0-9]*' status.txt)" | tee -a status.log
      pkill -KILL -f "^$B coordinator --listen 127.0.0.1:$PORT"
      sleep 1
      coordinator coord2.log
      restart=
    fi
    sleep 0.5
  else
    sleep 10
  fi
done
end=$(date +%s.%N)
"$B" download "$SIG" --only --rules cycles-are-draws --server $SERVER -o dl > dl.out
# /usr/bin/time ignores SIGINT: stop the processes it runs.
pkill -INT -f "^$B worker --coordinator $SERVER" || true
sleep 3
pkill -INT -f "^$B coordinator --listen 127.0.0.1:$PORT" || true
wait
echo "$SIG on $W workers, shared by ${SHARE_BY:-$W}: submit to finished $(echo "$end - $start" | bc) s"
for f in coord*.log w*.log; do tail -1 "$f"; done
sha256sum dl/*.xqtb
