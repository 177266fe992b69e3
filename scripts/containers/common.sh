# shellcheck shell=bash
# Shared by the scripts of scripts/containers/ (sourced, not run): where things live.
#
#   RELIABENCH_CACHE          cache folder (default ~/.cache/reliabench): image tarballs
#   RELIABENCH_DOCKER_ROOT    dockerd's data root (default /var/lib/reliabench-docker)
#   RELIABENCH_DOCKER_RUN     dockerd's exec root, pid file and socket (default /run/reliabench-docker)

RB_CONTAINERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RB_REPO="$(cd "$RB_CONTAINERS_DIR/../.." && pwd)"
RB_CACHE="${RELIABENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reliabench}"
RB_DOCKER_ROOT="${RELIABENCH_DOCKER_ROOT:-/var/lib/reliabench-docker}"
RB_DOCKER_RUN="${RELIABENCH_DOCKER_RUN:-/run/reliabench-docker}"
RB_DOCKER_SOCK="$RB_DOCKER_RUN/docker.sock"
RB_DOCKER_PIDFILE="$RB_DOCKER_RUN/dockerd.pid"
# podman reads reliabench's own settings (runc, ulimits within the host's), never /etc
export CONTAINERS_CONF="$RB_REPO/src/reliabench/sandbox/containers.conf"

rb_log() { printf 'containers: %s\n' "$*" >&2; }
