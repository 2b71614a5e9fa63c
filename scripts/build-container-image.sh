#!/usr/bin/env bash
# Builds the container sandbox's image without a registry: a minimal Debian bookworm root file system
# with python3 and nodejs, made by debootstrap from the Debian mirror apt already uses, then
# `docker import`ed. Skips the build when the image exists. Usage:
#   scripts/build-container-image.sh [IMAGE]   (default selfheal-sandbox:bookworm; ENGINE=podman for podman)
# Needs root (debootstrap) and the debootstrap package.
set -euo pipefail

IMAGE="${1:-selfheal-sandbox:bookworm}"
ENGINE="${ENGINE:-docker}"
# The mirror this machine's apt is configured with (deb822 `URIs:` or a one-line `deb` entry),
# so the build works where only that mirror is reachable.
debian_mirror() {
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
  } | grep -m 1 '/debian/\?$' || echo http://deb.debian.org/debian
}
MIRROR="${DEBIAN_MIRROR:-$(set +o pipefail; debian_mirror)}"

if "$ENGINE" image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE exists; not rebuilding"
  exit 0
fi

ROOTFS="$(mktemp -d /var/tmp/selfheal-rootfs.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT
debootstrap --variant=minbase --include=python3,nodejs bookworm "$ROOTFS" "$MIRROR" >/dev/null
# The JavaScript judge's execute-only Node (src/tools/judge/node-judge.ts): a process started from a
# binary its user cannot read is not dumpable, so a program of the same uid cannot reach its memory.
cp "$ROOTFS/usr/bin/node" "$ROOTFS/usr/local/lib/selfheal-judge-node"
chmod 0111 "$ROOTFS/usr/local/lib/selfheal-judge-node"
# No apt caches or lists in the image: they are only size.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | "$ENGINE" import --message "selfheal sandbox: debootstrap bookworm minbase + python3, nodejs" - "$IMAGE" >/dev/null
echo "built $IMAGE from $MIRROR"
