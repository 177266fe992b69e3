#!/usr/bin/env bash
# reliabench's own Docker daemon: its own data root, exec root, pid file and socket, no bridge,
# no iptables rules (the host's network is left alone; containers run with --network none).
#
#   scripts/containers/dockerd.sh start          # start it (waits until it answers)
#   scripts/containers/dockerd.sh stop           # stop it by its pid (waits until it is gone)
#   scripts/containers/dockerd.sh status         # exit 0 when it answers
#   scripts/containers/dockerd.sh run -- CMD...  # CMD with the daemon running, then stop it
#                                                # (if this call started it); CMD's exit status
#   scripts/containers/dockerd.sh env            # the DOCKER_HOST line to export
#
# reliabench's docker backend finds it by itself (docs/containers.md), or through DOCKER_HOST.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

answers() {
  DOCKER_HOST="unix://$RB_DOCKER_SOCK" timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

daemon_pid() {
  [ -s "$RB_DOCKER_PIDFILE" ] || return 1
  local pid
  pid="$(cat "$RB_DOCKER_PIDFILE")"
  [ -d "/proc/$pid" ] && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

start() {
  if answers; then
    rb_log "dockerd already answers on $RB_DOCKER_SOCK"
    return 0
  fi
  command -v dockerd >/dev/null || { rb_log "dockerd is missing: scripts/containers/setup.sh"; return 1; }
  [ "$(id -u)" = 0 ] || { rb_log "dockerd needs root"; return 1; }
  mkdir -p "$RB_DOCKER_ROOT" "$RB_DOCKER_RUN"
  chmod 0711 "$RB_DOCKER_RUN"
  local log="$RB_DOCKER_RUN/dockerd.log"
  local start=$SECONDS
  # containerd is started by dockerd itself (under the exec root); --bridge none: no docker0,
  # --iptables/--ip-masq false: no rule added to the host's firewall
  setsid dockerd --data-root "$RB_DOCKER_ROOT" --exec-root "$RB_DOCKER_RUN/exec" \
    --pidfile "$RB_DOCKER_PIDFILE" -H "unix://$RB_DOCKER_SOCK" \
    --bridge none --iptables=false --ip-masq=false \
    --userland-proxy=false --storage-driver overlay2 --log-level warn \
    >"$log" 2>&1 </dev/null &
  for _ in $(seq 1 300); do
    if answers; then
      rb_log "dockerd started (pid $(cat "$RB_DOCKER_PIDFILE"), $RB_DOCKER_SOCK) in $((SECONDS - start)) s"
      return 0
    fi
    if ! kill -0 $! 2>/dev/null; then
      rb_log "dockerd exited; its log ($log) ends:"
      tail -n 20 "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  rb_log "dockerd did not answer within 30 s; its log ($log) ends:"
  tail -n 20 "$log" >&2
  return 1
}

stop() {
  local pid
  if ! pid="$(daemon_pid)"; then
    rb_log "dockerd is not running"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 200); do
    [ -d "/proc/$pid" ] || { rb_log "dockerd stopped (pid $pid)"; return 0; }
    sleep 0.1
  done
  rb_log "dockerd (pid $pid) did not stop within 20 s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) answers && { echo "unix://$RB_DOCKER_SOCK"; exit 0; }; exit 1 ;;
  env) echo "export DOCKER_HOST=unix://$RB_DOCKER_SOCK" ;;
  run)
    shift
    [ "${1:-}" = "--" ] && shift
    started=0
    if ! answers; then
      if start; then started=1; else rb_log "running without dockerd: its tests skip (or fail in CI)"; fi
    fi
    rc=0
    DOCKER_HOST="unix://$RB_DOCKER_SOCK" "$@" || rc=$?
    [ $started = 1 ] && stop
    exit $rc ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
