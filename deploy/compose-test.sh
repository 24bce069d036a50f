#!/usr/bin/env bash
# End-to-end run of deploy/compose.yaml on this host's Docker: builds the runtime-only image around
# an `xqtb` binary built by cargo (and the Debian base first, when missing), checks the build
# context that .dockerignore leaves, starts a coordinator and three workers generating XQTB_PLAN,
# crashes one worker while it holds the planned table's lease (the restart policy brings it back),
# removes another container outright (`up --scale` replaces it), waits for every job, then queries,
# downloads, imports and verifies the tables from the host. tests/containers.rs runs it.
#
#   deploy/compose-test.sh [BINARY]          # default target/release/xqtb
#
# Environment: XQTB_PLAN [KRNvKR], XQTB_QUERY_FEN [a KRNvKR position], XQTB_LEASE_TTL_SECS [20;
# short so a crashed worker's job is re-queued soon], RUNTIME_IMAGE [xqtb-debian:<host suite>],
# TIMEOUT_SECS for the generation [1800], KEEP=1 to leave the stack running, DOCKER [docker].
# Exit status: 0 passed, 77 cannot run here (no engine, daemon, permission or base; the reason is
# printed), anything else failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
docker=${DOCKER:-docker}
log() { printf '[compose-test %s] %s\n' "$(date +%T)" "$*" >&2; }
skip() { log "SKIP: $*"; exit 77; }
die() { log "FAIL: $*"; exit 1; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }

bin=$(realpath -e "${1:-$repo/target/release/xqtb}" 2>/dev/null) ||
  die "no xqtb binary at ${1:-$repo/target/release/xqtb}: run 'cargo build --release' first"
plan=${XQTB_PLAN:-KRNvKR}
top=${plan%%[ ,]*}
fen=${XQTB_QUERY_FEN:-4k4/9/9/9/9/3r5/9/2N6/9/R4K3 w}
timeout=${TIMEOUT_SECS:-1800}

# --- Can a container engine run here? Each "no" is a skip with its reason, not a failure. -------
command -v "$docker" >/dev/null || skip "no docker client on PATH (Debian: apt-get install docker.io)"
if ! info=$("$docker" info 2>&1); then
  case $info in
    *"permission denied"*) skip "no permission to use the Docker daemon's socket (run as root or join the docker group)" ;;
    *) skip "no Docker daemon answers ('$docker info': ${info##*$'\n'}); start dockerd, see deploy/README.md" ;;
  esac
fi
if "$docker" compose version >/dev/null 2>&1; then
  compose=("$docker" compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  skip "neither 'docker compose' (v2) nor docker-compose (Debian: apt-get install docker-compose) is installed"
fi
# shellcheck disable=SC1091
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
base=${RUNTIME_IMAGE:-xqtb-debian:${suite:-bookworm}}
if ! "$docker" image inspect "$base" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
    log "no base image $base: making it with deploy/debian-base.sh (about 1.5 minutes)"
    t=$(ms)
    TAG=$base "$here/debian-base.sh" "$suite" >&2
    log "base image made in $(secs "$t" "$(ms)") s"
  else
    skip "no base image $base, and making one needs root and debootstrap (or set RUNTIME_IMAGE)"
  fi
fi

work=$(mktemp -d)
project=xqtb-test-$$
image=xqtb:compose-test-$$
dc() { "${compose[@]}" -p "$project" -f "$here/compose.yaml" "$@"; }
started=0
teardown() {
  local rc=$?
  if [ "$started" = 1 ]; then
    dc logs --no-color >"$work/compose.log" 2>&1 || true
    if [ "$rc" != 0 ]; then
      log "last lines of the containers' logs:"
      tail -n 40 "$work/compose.log" >&2 || true
    fi
    if [ "${KEEP:-0}" = 1 ]; then
      log "KEEP=1: leaving project $project running (${compose[*]} -p $project -f deploy/compose.yaml down -v)"
    else
      dc down -v --remove-orphans >/dev/null 2>&1 || log "compose down failed; remove project $project by hand"
    fi
  fi
  # The test's image goes too (quick to rebuild); the base stays, as it is slow to make.
  if [ "${KEEP:-0}" != 1 ]; then "$docker" image rm "$image" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap teardown EXIT

# --- Images ---------------------------------------------------------------------------------------
log "using $(command -v "$docker") ($("$docker" version --format '{{.Client.Version}} client, {{.Server.Version}} daemon'))," \
  "${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || echo '?')), base $base"
t=$(ms)
TAG=$image RUNTIME_IMAGE=$base "$here/runtime-image.sh" "$bin" >"$work/build.log" 2>&1 ||
  { tail -n 20 "$work/build.log" >&2; die "building the runtime image failed"; }
log "runtime image $image built in $(secs "$t" "$(ms)") s: $(tail -n 1 "$work/build.log")"

# The context deploy/Dockerfile gets from the repository root, as the daemon receives it: what
# the build needs is there, target/, .git and the token file are not.
members=$(sed -n 's/^members *= *\[\(.*\)\]/\1/p' "$repo/Cargo.toml" | tr -d '",')
[ -n "$members" ] || die "cannot read the workspace members from Cargo.toml"
need="Cargo.toml Cargo.lock src/main.rs proto web/index.html web/app.js deploy/Dockerfile $members"
t=$(ms)
"$docker" build --network none -t "$image-context" -f - "$repo" >"$work/context.log" 2>&1 <<EOF ||
FROM $base
COPY . /ctx
RUN cd /ctx && for p in $need; do test -e "\$p" || { echo "missing from the context: \$p"; exit 1; }; done \
 && for p in target .git deploy/xqtb.env web/dev; do test ! -e "\$p" || { echo "in the context: \$p"; exit 1; }; done \
 && echo "CONTEXT \$(du -sk . | cut -f1) KiB in \$(find . -type f | wc -l) files"
EOF
  { tail -n 20 "$work/context.log" >&2; die "the build context left by .dockerignore is wrong"; }
"$docker" image rm "$image-context" >/dev/null
sent=$(grep -m1 -o 'Sending build context to Docker daemon *[0-9.]*[kMG]*B' "$work/context.log" || true)
log "build context from the repository root: $(grep -m1 -o 'CONTEXT [0-9]* KiB in [0-9]* files' "$work/context.log" |
  cut -d' ' -f2-)${sent:+ (${sent##* } sent)}, target/ .git web/dev and the token file left out ($(secs "$t" "$(ms)") s)"

# --- The cluster ----------------------------------------------------------------------------------
XQTB_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
printf 'XQTB_TOKEN=%s\n' "$XQTB_TOKEN" >"$work/xqtb.env"
export XQTB_TOKEN XQTB_IMAGE=$image XQTB_ENV_FILE=$work/xqtb.env XQTB_PLAN=$plan \
  XQTB_LEASE_TTL_SECS=${XQTB_LEASE_TTL_SECS:-20} XQTB_PUBLISH_ADDR=127.0.0.1 XQTB_GRPC_PORT='' XQTB_METRICS_PORT=''
# (Ports published on 127.0.0.1 only, on ports Docker picks, so parallel runs and a real
# deployment on 7070 do not collide.)
t0=$(ms)
started=1
dc up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "compose up failed"; }
addr=$(dc port coordinator 7070) || die "cannot tell the coordinator's published port"
server=http://$addr
log "compose up: coordinator healthy and 3 workers started in $(secs "$t0" "$(ms)") s; gRPC on $server"

workers() {
  "$docker" ps -q --no-trunc --filter "label=com.docker.compose.project=$project" \
    --filter label=com.docker.compose.service=worker --filter status=running
}
status() { "$bin" status --server "$server" 2>/dev/null; }
[ "$(workers | wc -l)" = 3 ] || die "expected 3 running workers, found $(workers | wc -l)"
first_workers=$(workers)

# Crash the worker that holds the planned table's lease once it is KILL_AT_PERCENT [10] through
# it (SIGKILL to its process, as a crash or the OOM killer would; `docker kill` would count as a
# manual stop, which restart policies obey).
kill_at=${KILL_AT_PERCENT:-10}
deadline=$(( $(date +%s) + timeout ))
while :; do
  leased=$(status | grep -E "^  $top .* leased .* on " | head -n 1 || true)
  if [[ $leased =~ \(([0-9]+)%\)$ ]] && [ "${BASH_REMATCH[1]}" -ge "$kill_at" ]; then break; fi
  [ "$(date +%s)" -lt "$deadline" ] || die "no worker got $kill_at% through $top within ${timeout} s"
  sleep 0.5
done
wid=${leased##* on }
wid=${wid%% (*}
host=${wid#w*-}
host=${host%-*}
victim=
for c in $first_workers; do
  [ "$("$docker" inspect -f '{{.Config.Hostname}}' "$c")" = "$host" ] && victim=$c
done
[ -n "$victim" ] || die "no worker container has host name $host (worker $wid)"
vname=$("$docker" inspect -f '{{.Name}}' "$victim")
pid=$("$docker" inspect -f '{{.State.Pid}}' "$victim")
[ "$pid" -gt 1 ] || die "container $vname has no process to kill (pid $pid)"
kill -KILL "$pid"
tk=$(ms)
log "killed ${vname#/} (worker $wid, pid $pid on the host) holding ${leased#  }"
until [ "$("$docker" inspect -f '{{.State.Running}} {{.RestartCount}}' "$victim")" = "true 1" ]; do
  [ $(( $(ms) - tk )) -lt 60000 ] || die "${vname#/} was not restarted by the restart policy"
  sleep 0.5
done
log "${vname#/} restarted by the restart policy after $(secs "$tk" "$(ms)") s"

# Remove another worker container outright (a lost host, an operator's mistake) and let
# `up --scale` put a new container in its place.
gone=
for c in $first_workers; do [ "$c" != "$victim" ] && gone=$c; done
gname=$("$docker" inspect -f '{{.Name}}' "$gone")
# (-v: its anonymous /cache and /data volumes go with it; `compose down -v` no longer sees them.)
"$docker" rm -f -v "$gone" >/dev/null
dc up -d --no-recreate --scale worker=3 >"$work/scale.log" 2>&1 || { cat "$work/scale.log" >&2; die "compose up --scale failed"; }
[ "$(workers | wc -l)" = 3 ] || die "expected 3 running workers after --scale, found $(workers | wc -l)"
new=$(comm -13 <(echo "$first_workers" | sort) <(workers | sort))
[ "$(grep -c . <<<"$new")" = 1 ] || die "up --scale should have started one new worker container: ${new:-none}"
log "removed ${gname#/} (container ${gone:0:12}); up --scale worker=3 started" \
  "$("$docker" inspect -f '{{.Name}}' "$new" | tr -d /) (new container ${new:0:12})"

# The crashed worker's lease expires (XQTB_LEASE_TTL_SECS) and the job goes to a live worker.
while ! status | grep -qE "^  $top .* leased +attempts 2 on "; do
  if status | grep -qE "^  $top .* finished +attempts 2"; then break; fi
  [ "$(date +%s)" -lt "$deadline" ] || die "$top was not leased again after the crash"
  sleep 0.5
done
log "$top leased again (attempt 2) $(secs "$tk" "$(ms)") s after the crash, lease TTL $XQTB_LEASE_TTL_SECS s"

# --- Every job finishes ---------------------------------------------------------------------------
while :; do
  s=$(status) || s=
  line=$(grep -m1 '^jobs:' <<<"$s" || true)
  if [[ $line =~ ^jobs:\ ([0-9]+)\ finished,\ ([0-9]+)\ leased,\ ([0-9]+)\ ready,\ ([0-9]+)\ waiting,\ ([0-9]+)\ failed ]]; then
    [ "${BASH_REMATCH[5]}" = 0 ] || { echo "$s" >&2; die "a job failed"; }
    [ $(( BASH_REMATCH[2] + BASH_REMATCH[3] + BASH_REMATCH[4] )) = 0 ] && break
  fi
  [ "$(date +%s)" -lt "$deadline" ] || { echo "$s" >&2; die "generation did not finish within ${timeout} s"; }
  sleep 2
done
t1=$(ms)
log "all ${BASH_REMATCH[1]} jobs finished $(secs "$t0" "$t1") s after compose up:"
while IFS= read -r l; do echo "    $l"; done <<<"$s" >&2
grep -qE "^  $top .* finished +attempts [2-9]" <<<"$s" || die "$top finished without a second attempt, so the crash was not exercised"
restarts=$("$docker" logs "$victim" 2>&1 | grep -c 'registered') || true
[ "$restarts" -ge 2 ] || die "${vname#/} did not register again after its restart"

# --- The answers, from the host -------------------------------------------------------------------
answer=$("$bin" query "$fen" --server "$server" --json) || die "query failed"
grep -q '"category":"' <<<"$answer" || die "query gave no value: $answer"
log "query \"$fen\": $(grep -o '"table":"[^"]*","rules":"[^"]*","category":"[^"]*","dtm_plies":[0-9a-z]*' <<<"$answer")"
mapfile -t tables < <(sed -n 's/^  \([A-Za-z]*\) .* finished .*/\1/p' <<<"$s" | sort -u)
t=$(ms)
"$bin" download "${tables[@]}" -o "$work/shards" --server "$server" >/dev/null 2>&1 || die "download failed"
local_answer=$("$bin" probe "$fen" --shards "$work/shards" --json) || die "probe over the downloaded shards failed"
[ "$local_answer" = "$answer" ] || die "the downloaded shards answer differently from the coordinator"
"$bin" import "$work/shards"/*.xqtb --data "$work/store" >/dev/null || die "importing the downloaded shards failed"
"$bin" verify "$top" --data "$work/store" >/dev/null || die "$top from the containers does not verify"
log "downloaded ${#tables[@]} tables, the same answer from the shards, $top verified position by position ($(secs "$t" "$(ms)") s):"
(cd "$work/shards" && sha256sum -- *.xqtb) | sed 's/^/    /' >&2
for i in "$base" "$image"; do
  log "image $i: $(( $("$docker" image inspect --format '{{.Size}}' "$i") / 1000000 )) MB"
done
log "PASS: ${#tables[@]} tables in $(secs "$t0" "$t1") s with ${vname#/} crashed and restarted and ${gname#/} replaced"
