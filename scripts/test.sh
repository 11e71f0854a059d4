#!/usr/bin/env bash
# README command 2: the whole test suite. Starts the services the tests need (PostgreSQL, a Docker
# engine with runsc), builds the local images, runs `mvnw verify` (unit and integration tests and
# every build gate), and stops what it started. Safe to run twice, and where the services already run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk jdk
echo "test: using JDK at $JAVA_HOME"

stops=()
cleanup() {
  local status=$?
  for ((i = ${#stops[@]} - 1; i >= 0; i--)); do ${stops[i]} || status=1; done
  exit "$status"
}
trap cleanup EXIT

# The PostgreSQL server is shared by every test run on this machine: stop it only if this run
# started it.
if ! { command -v pg_isready >/dev/null 2>&1 &&
  pg_isready -q -h 127.0.0.1 -p "${AGENT_SANDBOX_PG_PORT:-25432}"; }; then
  stops+=("scripts/services/postgres.sh stop")
fi
# An assignment keeps set -e's hold on a failed start; eval "$(...)" would swallow it.
pg_env=$(scripts/services/postgres.sh start)
eval "$pg_env"

# Also prepares the microVM backend (install-host.sh: QEMU, nftables, the guest kernel); its ITs
# fail, never skip, when this host cannot boot a VM or create a tap.
scripts/services/docker.sh start
stops+=("scripts/services/docker.sh stop")

# clients: the client compatibility suite's image (ClientCompatibilityIT), built from Debian packages
# once and then skipped while its inputs are unchanged (about 9 minutes the first time on this
# project's loaded 2-core VM; seconds after that).
images/build.sh proxy workload clients

# The console's end-to-end test (cli's ConsoleIT) drives Debian's headless Chromium through its
# chromedriver; Selenium is told both paths, so nothing is downloaded at test time.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null 2>&1; then
    echo "test: apt-get update (package lists do not know chromium)" >&2
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y --no-install-recommends chromium chromium-driver
  fi
fi

# The MCP server's client test (cli's McpClientIT) runs the official TypeScript SDK's client under
# Node.js and installs it with npm ci from the npm registry (pinned in cli/src/test/mcp-client).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends nodejs npm >/dev/null 2>&1; then
    echo "test: apt-get update (package lists do not know nodejs, npm)" >&2
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y --no-install-recommends nodejs npm
  fi
fi

# The client compatibility suite (ClientCompatibilityIT) in its bounded CI form: each cell
# AGENT_SANDBOX_COMPAT_ROUNDS times (3 by default, to keep .ci/run under 45 minutes) instead of
# the IT's own 20, and its microVM column (MicroVmClientCompatibilityIT, one VM under emulation,
# well under a minute a round since the fence refuses the direct attempts rather than dropping
# them) AGENT_SANDBOX_COMPAT_VM_ROUNDS times (3 by default); the full form is
# AGENT_SANDBOX_COMPAT_ROUNDS=20 AGENT_SANDBOX_COMPAT_VM_ROUNDS=20 (docs/reliability.md). Its
# inspected-hosts form (InspectCompatibilityIT, one sandbox per runtime) runs each cell
# AGENT_SANDBOX_COMPAT_INSPECT_ROUNDS times (2 by default; the IT's own default is 5).
./mvnw -B -ntp verify -Dasb.compat.rounds="${AGENT_SANDBOX_COMPAT_ROUNDS:-3}" \
  -Dasb.compat.vm.rounds="${AGENT_SANDBOX_COMPAT_VM_ROUNDS:-3}" \
  -Dasb.compat.inspect.rounds="${AGENT_SANDBOX_COMPAT_INSPECT_ROUNDS:-2}" "$@"

# The Python client (clients/python, standard library only) against a real serve started by its
# tests from the jar verify just packaged; Debian's pytest runs them.
if ! command -v pytest-3 >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get install -y --no-install-recommends python3-pytest >/dev/null 2>&1 ||
    { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y --no-install-recommends python3-pytest; }
fi
AGENT_SANDBOX_JAR=cli/target/agent-sandbox.jar /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider clients/python/tests

# The TypeScript client and its deepagents backend (clients/typescript): npm ci from the committed
# lock (exact versions; the npm cache first, the registry only for what it lacks), the types checked
# against openapi.json and compiled, then node's test runner against a real serve that its
# test/run.mjs starts from the same jar on loopback with the Docker backend. Node.js and npm come
# from Debian, installed above for McpClientIT.
(cd clients/typescript && npm ci --prefer-offline --ignore-scripts --no-audit --no-fund &&
  AGENT_SANDBOX_JAR=../../cli/target/agent-sandbox.jar npm test)

# Coverage-guided fuzzing, bounded: each Jazzer target for AGENT_SANDBOX_FUZZ_SECONDS (20 s by
# default; 0 skips it). `verify` above already ran them as regression tests over their kept inputs.
if [ "${AGENT_SANDBOX_FUZZ_SECONDS:-20}" != 0 ]; then
  scripts/fuzz.sh
fi
