#!/usr/bin/env bash
# Install the agent CLIs that reliabench's examples run (examples/agents/*.toml), each into its
# own venv under .venv-agents/NAME, made from /usr/bin/python3 so that the sandbox's
# unprivileged uid can run it (a pyenv interpreter under a 0700 home cannot be).
#
#   scripts/install-agent-clis.sh                 # both: mini-swe-agent and aider
#   scripts/install-agent-clis.sh aider           # one of them
#   AGENTS_VENV_DIR=/opt/agents scripts/install-agent-clis.sh   # elsewhere
#
# Versions are pinned (tested with reliabench); override with MINI_SWE_AGENT_SPEC / AIDER_SPEC.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${AGENTS_PYTHON:-/usr/bin/python3}"
DEST="${AGENTS_VENV_DIR:-.venv-agents}"
MINI_SWE_AGENT_SPEC="${MINI_SWE_AGENT_SPEC:-mini-swe-agent==2.4.6}"
AIDER_SPEC="${AIDER_SPEC:-aider-chat==0.86.2}"

install_one() {
  local name="$1" spec="$2" exe="$3"
  local venv="$DEST/$name"
  if [ -x "$venv/bin/$exe" ] && "$venv/bin/python" -m pip show -q "${spec%%[=<>]*}" >/dev/null 2>&1 \
      && [ "$("$venv/bin/python" -m pip show "${spec%%[=<>]*}" 2>/dev/null | sed -n 's/^Version: //p')" = "${spec##*==}" ]; then
    echo "$name: already installed in $venv ($spec)"
    return
  fi
  echo "$name: installing $spec into $venv"
  rm -rf "$venv"
  mkdir -p "$DEST"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip --disable-pip-version-check -q install "$spec"
  chmod -R a+rX "$venv"   # readable and runnable by the sandbox's slot uids
  "$venv/bin/$exe" --help >/dev/null 2>&1 || { echo "$name: $venv/bin/$exe does not run" >&2; exit 1; }
  echo "$name: ok ($venv/bin/$exe)"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(mini-swe-agent aider)
for t in "${targets[@]}"; do
  case "$t" in
    mini-swe-agent) install_one mini-swe-agent "$MINI_SWE_AGENT_SPEC" mini ;;
    aider) install_one aider "$AIDER_SPEC" aider ;;
    *) echo "unknown agent CLI: $t (known: mini-swe-agent, aider)" >&2; exit 2 ;;
  esac
done
