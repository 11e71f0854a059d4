#!/usr/bin/env bash
# Starts or stops the Docker daemon the Docker backend's integration tests need.
#   scripts/services/docker.sh start   install docker.io/runsc if missing, start dockerd if none runs
#   scripts/services/docker.sh stop    stop dockerd only if `start` started it
# Then: images/build.sh builds the images, and `./mvnw -pl backend-docker -am verify` runs the ITs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${AGENT_SANDBOX_DOCKER_STATE:-/tmp/agent-sandbox-docker-service.started}
export AGENT_SANDBOX_DOCKERD_PIDFILE=${AGENT_SANDBOX_DOCKERD_PIDFILE:-/run/agent-sandbox-dockerd.pid}

case "${1:-}" in
  start)
    if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
      # Someone else's daemon: make sure runsc is registered, never restart it.
      "$ROOT/scripts/install-host.sh"
      echo "docker: daemon already running, left as it is" >&2
    else
      "$ROOT/scripts/install-host.sh"
      cp "$AGENT_SANDBOX_DOCKERD_PIDFILE" "$STATE"
      echo "docker: started dockerd (pid $(cat "$STATE"))" >&2
    fi
    ;;
  stop)
    if [ -f "$STATE" ]; then
      pid=$(cat "$STATE")
      if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 30); do
          kill -0 "$pid" 2>/dev/null || break
          sleep 1
        done
        kill -0 "$pid" 2>/dev/null && echo "docker: dockerd $pid still running after 30 s" >&2
      fi
      rm -f "$STATE"
      echo "docker: stopped the dockerd this script started" >&2
    else
      echo "docker: this script started no dockerd; nothing to stop" >&2
    fi
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
