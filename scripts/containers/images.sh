#!/usr/bin/env bash
# Build reliabench's test images offline, from the Debian archive apt already uses, and import
# them into podman and docker (whichever is there; docker through scripts/containers/dockerd.sh).
#
#   scripts/containers/images.sh            # build (or reuse the cached tarball) and import
#   scripts/containers/images.sh --print    # the image references, one per line
#
# The images:
#   reliabench/python3-pytest:bookworm        mmdebstrap --variant=apt --include=python3,python3-pytest
#                                             bookworm (no registry: the archive apt uses); the
#                                             tarball is cached as $RELIABENCH_CACHE/images/<spec hash>.tar
#   reliabench/python3-pytest-extra:bookworm  built on top of it from images/extra/Dockerfile by
#                                             the runtime, network off, --pull=never
# Each image carries the label org.reliabench.spec=<hash of its spec>; an image whose label
# matches is left alone, so a second call costs a few seconds.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

SUITE=bookworm
VARIANT=apt
INCLUDE=python3,python3-pytest
BASE=reliabench/python3-pytest:bookworm
EXTRA=reliabench/python3-pytest-extra:bookworm
EXTRA_DIR="$RB_CONTAINERS_DIR/images/extra"
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
# bump FORMAT when the way the tarball is made changes
FORMAT=1
SPEC="format=$FORMAT suite=$SUITE variant=$VARIANT include=$INCLUDE arch=$ARCH"
HASH="$(printf '%s' "$SPEC" | sha256sum | cut -c1-16)"
EXTRA_HASH="$( (printf '%s\n' "$HASH"; cat "$EXTRA_DIR/Dockerfile") | sha256sum | cut -c1-16)"

if [ "${1:-}" = "--print" ]; then
  printf '%s\n%s\n' "$BASE" "$EXTRA"
  exit 0
fi

# The mirrors apt already uses (every sources file of the host) and the apt settings that reach
# them (a proxy, a snapshot archive's expired Valid-Until): an offline machine has no other.
mirrors=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && grep -qE '^[^#]*(deb |URIs:)' "$f" && mirrors+=("$f")
done
aptopts=()
while IFS= read -r line; do
  aptopts+=("--aptopt=$line")
done < <(apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https)::Proxy |^Acquire::Check-Valid-Until |^Acquire::Check-Date ' || true)

build_tarball() {
  local tar="$RB_CACHE/images/$HASH.tar"
  if [ -s "$tar" ]; then
    rb_log "cached: $tar ($SPEC)"
    echo "$tar"
    return
  fi
  command -v mmdebstrap >/dev/null || { rb_log "mmdebstrap is missing: scripts/containers/setup.sh install"; exit 1; }
  [ ${#mirrors[@]} -gt 0 ] || { rb_log "no apt sources found under /etc/apt: cannot build offline"; exit 1; }
  mkdir -p "$RB_CACHE/images"
  local tmp="$RB_CACHE/images/.$HASH.$$.tar"
  rb_log "building $BASE with mmdebstrap ($SPEC) from ${mirrors[*]}"
  local start=$SECONDS
  # stdout of mmdebstrap is the tarball's path only on our side: its own output goes to stderr
  mmdebstrap --quiet --variant="$VARIANT" --include="$INCLUDE" --architectures="$ARCH" \
    "${aptopts[@]}" --aptopt='Apt::Install-Recommends "false"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    "$SUITE" "$tmp" "${mirrors[@]}" >&2 || { rm -f "$tmp"; rb_log "mmdebstrap failed"; exit 1; }
  mv "$tmp" "$tar"
  rb_log "built $tar in $((SECONDS - start)) s ($(du -h "$tar" | cut -f1))"
  echo "$tar"
}

# current_label RUNTIME IMAGE: the spec label of IMAGE in RUNTIME, empty when it has none
current_label() {
  "$1" image inspect --format '{{ index .Config.Labels "org.reliabench.spec" }}' "$2" 2>/dev/null || true
}

import_into() {
  local rt="$1" tar="$2"
  if [ "$(current_label "$rt" "$BASE")" = "$HASH" ]; then
    rb_log "$rt: $BASE is up to date ($HASH)"
  else
    local start=$SECONDS
    "$rt" import --change "LABEL org.reliabench.spec=$HASH" \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' "$tar" "$BASE" >/dev/null
    rb_log "$rt: imported $BASE in $((SECONDS - start)) s"
  fi
  if [ "$(current_label "$rt" "$EXTRA")" = "$EXTRA_HASH" ]; then
    rb_log "$rt: $EXTRA is up to date ($EXTRA_HASH)"
  else
    local start=$SECONDS
    case "$rt" in
      podman) podman build --quiet --network none --pull=never --label "org.reliabench.spec=$EXTRA_HASH" \
                -t "$EXTRA" "$EXTRA_DIR" >/dev/null ;;
      docker) DOCKER_BUILDKIT=0 docker build --quiet --network none --pull=false \
                --label "org.reliabench.spec=$EXTRA_HASH" -t "$EXTRA" "$EXTRA_DIR" >/dev/null ;;
    esac
    rb_log "$rt: built $EXTRA in $((SECONDS - start)) s"
  fi
}

tar_path="$(build_tarball)"
did=0
if command -v podman >/dev/null; then
  import_into podman "$tar_path"
  did=1
fi
if command -v dockerd >/dev/null; then
  # into reliabench's own dockerd: started for this (and stopped again) unless it already runs
  export DOCKER_HOST="unix://$RB_DOCKER_SOCK"
  if "$RB_CONTAINERS_DIR/dockerd.sh" status >/dev/null 2>&1; then
    import_into docker "$tar_path"
  else
    "$RB_CONTAINERS_DIR/dockerd.sh" start
    trap '"$RB_CONTAINERS_DIR/dockerd.sh" stop' EXIT
    import_into docker "$tar_path"
  fi
  did=1
fi
[ $did = 1 ] || rb_log "neither podman nor dockerd is installed: nothing imported (scripts/containers/setup.sh)"
