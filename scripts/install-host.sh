#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host for the Docker backend: installs docker.io and runsc (and what
# images/build.sh needs: busybox-static, curl, iproute2 for the tests; tmux, in which the CLI's
# tests record a terminal session) when they are missing, registers runsc as a Docker runtime,
# installs the agent-sandbox bash/zsh completion when the CLI jar is built, and starts dockerd if
# no daemon answers.
#
# Idempotent: safe to run twice and on a host whose dockerd already runs (then the daemon is left
# alone; if runsc had to be registered the script says a restart is needed instead of restarting a
# daemon it does not own).
#
# Works without systemd (CI containers and this project's VMs have none): dockerd is started with
# nohup and its log goes to $AGENT_SANDBOX_DOCKERD_LOG (default /var/log/agent-sandbox-dockerd.log).
set -euo pipefail

log() { printf 'install-host: %s\n' "$*" >&2; }
die() { printf 'install-host: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "installing the Docker backend's host parts needs root (run it with sudo)"

DAEMON_JSON=${AGENT_SANDBOX_DAEMON_JSON:-/etc/docker/daemon.json}
DOCKERD_LOG=${AGENT_SANDBOX_DOCKERD_LOG:-/var/log/agent-sandbox-dockerd.log}
DOCKERD_PIDFILE=${AGENT_SANDBOX_DOCKERD_PIDFILE:-/run/agent-sandbox-dockerd.pid}
SOCKET=/var/run/docker.sock

# --- packages -------------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v runsc >/dev/null 2>&1 || missing+=(runsc)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# images/build.sh assembles the images from these host binaries.
command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# cli's CliRunIT drives the command line in a real terminal and records what a person sees.
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # apt-get update only when the package lists cannot resolve what we need.
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    log "apt-get update (package lists do not know ${missing[*]})"
    apt-get update -qq
    apt-get install -y --no-install-recommends "${missing[@]}"
  fi
  log "installed ${missing[*]}"
fi

# --- shell completion -----------------------------------------------------------------------
# The script picocli generates from the command tree (agent-sandbox completion bash); it serves
# zsh too, through bashcompinit. Only when the jar is built: this script must not need a JDK.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMPLETION_DIR=${AGENT_SANDBOX_COMPLETION_DIR:-/usr/share/bash-completion/completions}
if [ -f "$ROOT/cli/target/agent-sandbox.jar" ]; then
  mkdir -p "$COMPLETION_DIR"
  if "$ROOT/bin/agent-sandbox" completion bash >"$COMPLETION_DIR/agent-sandbox.tmp"; then
    mv "$COMPLETION_DIR/agent-sandbox.tmp" "$COMPLETION_DIR/agent-sandbox"
    log "installed bash completion in $COMPLETION_DIR/agent-sandbox (zsh: source it from ~/.zshrc)"
  else
    rm -f "$COMPLETION_DIR/agent-sandbox.tmp"
    log "could not generate the completion script; skipped (bin/agent-sandbox completion bash)"
  fi
else
  log "cli/target/agent-sandbox.jar is not built; completion not installed (run this script again after building)"
fi

# --- register runsc -------------------------------------------------------------------------
# Debian's runsc cannot set up its own network stack inside this kind of VM ("cannot run with
# network enabled in root network namespace"); --network=host makes runsc use the network
# namespace Docker created for the container, so Docker's network fence still applies.
RUNSC_PATH=$(command -v runsc)
mkdir -p "$(dirname "$DAEMON_JSON")"
changed=$(python3 - "$DAEMON_JSON" "$RUNSC_PATH" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
config = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
wanted = {"path": runsc, "runtimeArgs": ["--network=host"]}
runtimes = config.setdefault("runtimes", {})
if runtimes.get("runsc") == wanted:
    print("unchanged")
else:
    runtimes["runsc"] = wanted
    tmp = path + ".agent-sandbox.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print("changed")
PY
)
[ "$changed" = changed ] && log "registered runsc in $DAEMON_JSON"

# --- daemon ---------------------------------------------------------------------------------
daemon_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if daemon_up; then
  if [ "$changed" = changed ]; then
    if [ -f "$DOCKERD_PIDFILE" ] && kill -0 "$(cat "$DOCKERD_PIDFILE")" 2>/dev/null; then
      # Our own daemon: a SIGHUP makes dockerd reload its runtimes from daemon.json.
      kill -HUP "$(cat "$DOCKERD_PIDFILE")"
      log "asked the dockerd this script started to reload $DAEMON_JSON"
    else
      log "dockerd already runs; reload it (kill -HUP its pid) so that it sees the runsc runtime"
    fi
  fi
  log "dockerd is running ($(docker version --format '{{.Server.Version}}'))"
  exit 0
fi

log "starting dockerd (log: $DOCKERD_LOG)"
mkdir -p "$(dirname "$DOCKERD_LOG")"
nohup dockerd --pidfile "$DOCKERD_PIDFILE" >>"$DOCKERD_LOG" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if daemon_up; then
    log "dockerd is running ($(docker version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 1
done
tail -n 20 "$DOCKERD_LOG" >&2 || true
die "starting dockerd: no answer on $SOCKET after 60 s (see $DOCKERD_LOG)"
