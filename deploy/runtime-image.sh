#!/usr/bin/env bash
# Builds the runtime-only image (deploy/Dockerfile.runtime) around an `xqtb` binary built by cargo
# on this host, for hosts where the multi-stage deploy/Dockerfile cannot pull a Rust image:
#
#   cargo build --release && deploy/runtime-image.sh                  # target/release/xqtb
#   deploy/runtime-image.sh path/to/xqtb                              # another build
#
# Environment: TAG (default xqtb:runtime), RUNTIME_IMAGE (the base, default xqtb-debian:SUITE of
# this host, made by deploy/debian-base.sh), DOCKER (the client, default `docker`).
#
# The build context is a temporary directory holding only the binary, never the repository;
# debug info (most of the binary) is stripped there but the symbol table stays, so a panic's
# backtrace still names functions.
set -euo pipefail

die() { echo "runtime-image.sh: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
docker=${DOCKER:-docker}
bin=${1:-$here/../target/release/xqtb}
tag=${TAG:-xqtb:runtime}
if [ -z "${RUNTIME_IMAGE:-}" ]; then
  # shellcheck disable=SC1091
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$suite" ] || die "cannot tell this host's Debian suite; set RUNTIME_IMAGE"
  RUNTIME_IMAGE=xqtb-debian:$suite
fi

[ -x "$bin" ] || die "no executable at $bin: run 'cargo build --release' first, or pass the binary's path"
command -v "$docker" >/dev/null || die "$docker not found: apt-get install docker.io"
"$docker" info >/dev/null 2>&1 || die "cannot reach a Docker daemon with '$docker info' (is dockerd running?)"
"$docker" image inspect "$RUNTIME_IMAGE" >/dev/null 2>&1 ||
  die "no base image $RUNTIME_IMAGE: make it with 'sudo deploy/debian-base.sh', or set RUNTIME_IMAGE"

# Tell which glibc the binary needs, so a refusal by the base (checked while building) is clear.
if command -v objdump >/dev/null; then
  need=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n 1 || true)
  echo "$bin needs ${need:-an unknown glibc}; base $RUNTIME_IMAGE"
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
install -m 0755 "$bin" "$ctx/xqtb"
if command -v strip >/dev/null; then strip --strip-debug "$ctx/xqtb"; fi

start=$(date +%s)
"$docker" build --network none -f "$here/Dockerfile.runtime" \
  --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" -t "$tag" "$ctx"
size=$("$docker" image inspect --format '{{.Size}}' "$tag")
echo "built $tag in $(( $(date +%s) - start )) s: $(( size / 1000000 )) MB ($("$docker" run --rm --network none "$tag" --version))"
