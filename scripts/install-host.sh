#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host for the Docker backend: installs docker.io and runsc (and what
# images/build.sh needs: busybox-static, curl, iproute2 for the tests) when they are missing, registers runsc as a Docker runtime and starts dockerd if no daemon answers.
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

# --- register runsc -------------------------------------------------------------------------
# runsc is registered through scripts/lib/runsc-netstack, which runs it with its own network stack
# inside the network namespace Docker made for the container (so Docker's network fence applies
# unchanged). Debian's runsc refuses that mode on Linux >= 6.x through a stale check, and its other
# mode, --network=host, breaks blocking reads on sockets (busybox wget fails); the wrapper explains
# both, and refuses containers that share the host's network namespace. docs/backends/docker.md.
RUNSC_PATH=$(command -v runsc)
WRAPPER=${AGENT_SANDBOX_RUNSC_WRAPPER:-/usr/local/libexec/agent-sandbox/runsc-netstack}
mkdir -p "$(dirname "$WRAPPER")"
wrapper_source="$(dirname "$0")/lib/runsc-netstack"
[ -f "$wrapper_source" ] || die "registering runsc: $wrapper_source is missing (run this script from a checkout)"
# The wrapper names the runsc it found here, so dockerd's environment does not matter.
sed "s#^RUNSC=\\\${AGENT_SANDBOX_RUNSC:-/usr/bin/runsc}\$#RUNSC=\\\${AGENT_SANDBOX_RUNSC:-$RUNSC_PATH}#" \
  "$wrapper_source" >"$WRAPPER.tmp"
chmod 755 "$WRAPPER.tmp"
mv "$WRAPPER.tmp" "$WRAPPER"
mkdir -p "$(dirname "$DAEMON_JSON")"
changed=$(python3 - "$DAEMON_JSON" "$WRAPPER" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
config = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
wanted = {"path": runsc}
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
