#!/usr/bin/env bash
# Makes a Debian base image from Debian's own packages, for hosts that reach a Debian mirror but
# no image registry (so `FROM debian:bookworm-slim` cannot be pulled):
#
#   sudo deploy/debian-base.sh              # suite of this host (/etc/os-release), tag xqtb-debian:SUITE
#   sudo deploy/debian-base.sh bookworm     # an explicit suite
#
# Environment: TAG (image name, default xqtb-debian:SUITE), MIRROR (a Debian mirror URL; default:
# debootstrap's own), DOCKER (the client, default `docker`).
#
# The image is a `minbase` debootstrap (essential packages, apt, nothing else): what the `xqtb`
# binary needs at run time is glibc and libgcc_s (see `ldd target/release/xqtb`), both essential.
# No ca-certificates: xqtb's TLS trusts only the CA file given with `--ca`, never a system store.
# The suite defaults to the host's so that a binary built by cargo on the host finds the same or
# a newer glibc in the image (glibc is backward compatible, not forward).
set -euo pipefail

die() { echo "debian-base.sh: $*" >&2; exit 1; }

docker=${DOCKER:-docker}
if [ $# -gt 1 ]; then die "usage: debian-base.sh [SUITE]"; fi
suite=${1:-}
if [ -z "$suite" ]; then
  # shellcheck disable=SC1091
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$suite" ] || die "cannot tell this host's Debian suite from /etc/os-release; pass one (e.g. bookworm)"
fi
tag=${TAG:-xqtb-debian:$suite}

[ "$(id -u)" = 0 ] || die "debootstrap needs root (it creates device nodes and chroots); run with sudo"
command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
command -v "$docker" >/dev/null || die "$docker not found: apt-get install docker.io"
"$docker" info >/dev/null 2>&1 || die "cannot reach a Docker daemon with '$docker info' (is dockerd running?)"

work=$(mktemp -d /var/tmp/xqtb-debian-base.XXXXXX)
root=$work/root
cleanup() {
  # debootstrap mounts /proc and /sys inside the target while it runs and may leave them mounted
  # when it fails; unmount before removing so `rm` cannot reach into the host's /proc or /sys.
  if mountpoint -q "$root/proc" 2>/dev/null; then umount -l "$root/proc" || true; fi
  if mountpoint -q "$root/sys" 2>/dev/null; then umount -l "$root/sys" || true; fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

start=$(date +%s)
echo "debootstrap --variant=minbase $suite into $root ..."
# shellcheck disable=SC2086 # MIRROR is optional: no argument at all when it is unset
if ! debootstrap --variant=minbase "$suite" "$root" ${MIRROR:-} >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  die "debootstrap failed (last lines above); is a Debian mirror reachable? set MIRROR to use another"
fi

# Trim what an image never uses: package lists and caches (apt-get update brings them back),
# documentation and manual pages. Copyright files stay: the image redistributes the packages.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/log/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete

# `docker import` turns a root file system into a one-layer image; numeric owners keep root's
# files root's whatever the host's user names are.
tar --numeric-owner -C "$root" -c . |
  "$docker" import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --message "debootstrap --variant=minbase $suite (deploy/debian-base.sh)" \
    - "$tag" >/dev/null

# (The whole output first: `| head -n 1` would close the pipe under docker and fail the pipeline.)
glibc=$("$docker" run --rm --network none "$tag" ldd --version)
glibc=${glibc%%$'\n'*}
size=$("$docker" image inspect --format '{{.Size}}' "$tag")
echo "built $tag in $(( $(date +%s) - start )) s: $(( size / 1000000 )) MB, $glibc"
