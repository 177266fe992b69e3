#!/usr/bin/env bash
# Set up the container backends on this machine (root, Debian/Ubuntu), offline-proof: every
# package comes from the archive apt already uses, every image is built from it (no registry).
#
#   scripts/containers/setup.sh            # install what is missing, then build/import the images
#   scripts/containers/setup.sh install    # only the packages
#   scripts/containers/setup.sh images     # only the images (scripts/containers/images.sh)
#
# Packages: podman, runc (podman's runtime here: crun refuses hybrid cgroup hosts), catatonit
# (every container's init), docker.io (dockerd, started by scripts/containers/dockerd.sh with its
# own roots and socket, never the system service), mmdebstrap (builds the test images).
# Podman's settings ship inside reliabench (src/reliabench/sandbox/containers.conf, passed
# through CONTAINERS_CONF): nothing is written to /etc. A second run costs a few seconds.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

PACKAGES=(podman runc catatonit docker.io mmdebstrap)

install() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    rb_log "packages present: ${PACKAGES[*]}"
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    rb_log "missing ${missing[*]}: install them as root (apt-get install ${missing[*]})"
    return 1
  fi
  local start=$SECONDS
  rb_log "installing ${missing[*]}"
  apt-get update -qq
  # docker.io's maintainer script would start the system's dockerd (a docker0 bridge, iptables
  # rules): reliabench runs its own (dockerd.sh), so no service is started during the install
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && made_policy=1
  fi
  # no recommends: rootful podman needs neither buildah, slirp4netns nor fuse-overlayfs here
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { [ $made_policy = 1 ] && rm -f "$policy"; return 1; }
  [ $made_policy = 1 ] && rm -f "$policy"
  rb_log "installed in $((SECONDS - start)) s"
}

case "${1:-all}" in
  install) install ;;
  images) "$RB_CONTAINERS_DIR/images.sh" ;;
  all)
    start=$SECONDS
    install
    "$RB_CONTAINERS_DIR/images.sh"
    rb_log "set up in $((SECONDS - start)) s" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
