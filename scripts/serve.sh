#!/usr/bin/env bash
# README command 1: installs what the host lacks for sandboxes (a Docker engine with runsc
# registered, via scripts/install-host.sh), builds the runnable jar, and runs the control plane in
# the foreground on the embedded SQLite store under ./data. Safe to run again: every step is
# idempotent and the store and first admin token are kept. Arguments go to `agent-sandbox serve`
# (such as --listen 0.0.0.0:8080).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$root"
# shellcheck source=lib/jdk.sh
. "$root/scripts/lib/jdk.sh"

if [ -x scripts/install-host.sh ]; then
  # Installing packages and starting dockerd needs root.
  if [ "$(id -u)" -eq 0 ]; then
    scripts/install-host.sh
  elif command -v sudo >/dev/null 2>&1; then
    sudo scripts/install-host.sh
  else
    echo "serve.sh: scripts/install-host.sh needs root: run serve.sh as root or install sudo" >&2
    exit 1
  fi
else
  echo "serve.sh: scripts/install-host.sh is not there: host set-up for sandboxes skipped" >&2
fi

asb_find_jdk jdk
echo "serve.sh: building with $JAVA_HOME" >&2
./mvnw -B -q -DskipTests -pl cli -am package
# The JDK's class cache for the jar just built (JDK 25+; bin/agent-sandbox uses it): a faster start.
scripts/aot-cache.sh

# The sandboxes' images (the per-run proxy and the default workload): no registry is assumed, so
# they are built here, from this checkout, every time (a rebuild keeps them in step with the code).
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  images/build.sh
elif command -v sudo >/dev/null 2>&1 && [ "$(id -u)" -ne 0 ]; then
  sudo --preserve-env=JAVA_HOME images/build.sh
else
  echo "serve.sh: no Docker daemon reachable: images not built, runs will be refused until one is" >&2
fi

exec bin/agent-sandbox serve "$@"
