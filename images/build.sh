#!/usr/bin/env bash
# Builds the Docker backend's local images without any registry, by `docker import` of root
# filesystems assembled from this host's files:
#   agent-sandbox/proxy:dev     a jlink'd Java runtime (only the modules the proxy needs), the JDK's AOT
#                               cache of the proxy trained at build time, the shaded proxy jar, busybox for the
#                               launcher that writes the run's policy file (or, with AGENT_SANDBOX_PROXY_AWAIT,
#                               starts the proxy awaiting its policy on stdin)
#   agent-sandbox/workload:dev  busybox and curl, the tools the integration tests use inside a sandbox
#   agent-sandbox/clients:dev   the client compatibility suite's workload (ClientCompatibilityIT): a
#                               Debian root filesystem made by mmdebstrap from Debian packages only
#                               (curl, busybox wget, python3 with requests and pip, git, a JDK, node);
#                               skipped when an image with the same inputs exists
# Usage: images/build.sh [proxy|workload|clients]...   (proxy and workload when no argument is given)
#        AGENT_SANDBOX_PROXY_JAR=path/to/agent-sandbox-proxy.jar images/build.sh proxy   (a given jar)
#        AGENT_SANDBOX_PROXY_IMAGE=agent-sandbox/proxy:candidate images/build.sh proxy   (another tag)
# Needs: docker, busybox-static (apt), curl, a JDK >= 21 (JAVA_HOME or /usr/lib/jvm/temurin-25-*).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROXY_IMAGE=${AGENT_SANDBOX_PROXY_IMAGE:-agent-sandbox/proxy:dev}
WORK=$(mktemp -d /tmp/agent-sandbox-images.XXXXXX)
# The AOT training's container and staging image, removed also when the build is interrupted.
TRAINING_CONTAINER=agent-sandbox-aot-training-$$
TRAINING_IMAGE=agent-sandbox/proxy:aot-training-$$
cleanup() {
  if [ -n "${TRAINING_STARTED:-}" ]; then
    docker rm -f "$TRAINING_CONTAINER" >/dev/null 2>&1 || true
    docker rmi "$TRAINING_IMAGE" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

log() { printf 'images: %s\n' "$*" >&2; }
die() { printf 'images: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "building images: docker is not installed (run scripts/install-host.sh)"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
  || die "building images: no Docker daemon answers (run scripts/install-host.sh)"

BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || die "building images: busybox is missing (apt-get install busybox-static, or run scripts/install-host.sh)"
command -v curl >/dev/null || die "building images: curl is missing (apt-get install curl)"

# Copies a dynamically linked program and every shared library it loads into a root filesystem,
# keeping their paths, so the image runs the host's own build of it.
copy_with_libs() {
  local rootfs=$1 binary=$2
  mkdir -p "$rootfs$(dirname "$binary")"
  cp -L "$binary" "$rootfs$binary"
  # ldd fails on a static binary: then there is nothing to copy.
  { ldd "$binary" 2>/dev/null || true; } | { grep -oE '/[^ ]+' || true; } | sort -u | while read -r lib; do
    [ -e "$lib" ] || continue
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

base_rootfs() {
  local rootfs=$1
  mkdir -p "$rootfs"/{bin,etc,tmp,proc,sys,dev,root}
  chmod 1777 "$rootfs/tmp"
  # busybox-static needs nothing else; a dynamically linked busybox brings its libraries along.
  copy_with_libs "$rootfs" "$BUSYBOX"
  [ "$BUSYBOX" = /bin/busybox ] || mv "$rootfs$BUSYBOX" "$rootfs/bin/busybox"
  for applet in $("$BUSYBOX" --list); do
    [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
    >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
  # Docker overrides these at run time; they exist so that the mounts have a target.
  : >"$rootfs/etc/hosts"
  : >"$rootfs/etc/resolv.conf"
  : >"$rootfs/etc/hostname"
}

build_workload() {
  local rootfs=$WORK/workload
  base_rootfs "$rootfs"
  copy_with_libs "$rootfs" "$(command -v curl)"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    -c 'USER 65534:65534' \
    -c 'WORKDIR /tmp' \
    -c 'CMD ["/bin/sh"]' \
    -m 'agent-sandbox test workload: busybox and curl' \
    - agent-sandbox/workload:dev >/dev/null
  # :latest is the image an agent gets when its configuration names none (the README's tour).
  docker tag agent-sandbox/workload:dev agent-sandbox/workload:latest
  log "built agent-sandbox/workload:dev and :latest ($(du -sh "$rootfs" | cut -f1))"
}

# The client suite's packages (node-undici: Node 18's global fetch reads no proxy variable; the
# probe points it at the proxy with undici's ProxyAgent, as a Node program must). With the suite,
# the mirror and the text of build_clients they make the inputs hash that the image carries as a
# label, so an unchanged image is not built again.
CLIENTS_IMAGE=agent-sandbox/clients:dev
CLIENTS_SUITE=bookworm
CLIENTS_PACKAGES=ca-certificates,curl,busybox-static,python3,python3-requests,python3-pip,git,openjdk-17-jdk-headless,nodejs,node-undici
CLIENTS_MIRROR=${AGENT_SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CLIENTS_CACHE=${AGENT_SANDBOX_IMAGE_CACHE:-/var/cache/agent-sandbox/images}/clients-debs

build_clients() {
  local inputs existing tar=$WORK/clients.tar started
  inputs=$( { printf '%s\n' "$CLIENTS_SUITE" "$CLIENTS_PACKAGES" "$CLIENTS_MIRROR"; declare -f build_clients; } \
    | sha256sum | cut -c1-16)
  existing=$(docker image inspect --format '{{index .Config.Labels "agent-sandbox.image-inputs"}}' \
    "$CLIENTS_IMAGE" 2>/dev/null || true)
  if [ "$existing" = "$inputs" ]; then
    log "$CLIENTS_IMAGE is up to date (inputs $inputs)"
    return
  fi
  command -v mmdebstrap >/dev/null \
    || die "building $CLIENTS_IMAGE: mmdebstrap is missing (apt-get install mmdebstrap, or run scripts/install-host.sh)"
  started=$(date +%s)
  log "building $CLIENTS_IMAGE from $CLIENTS_SUITE packages (inputs $inputs)"
  # Essential packages plus the clients; no documentation, manuals or translations. The -updates
  # and security suites keep the clients' TLS stacks current. (A newer package on the mirror does
  # not change the inputs hash: `docker rmi agent-sandbox/clients:dev` forces a rebuild.)
  # The JDK's postinst links its manual pages into /usr/share/man/man1 and fails when that directory
  # is missing, as it is when manual pages are left out.
  # The downloaded packages are kept in $CLIENTS_CACHE for the next build (mmdebstrap's own recipe).
  mkdir -p "$CLIENTS_CACHE"
  timeout 1800 mmdebstrap --variant=essential --include="$CLIENTS_PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --skip=essential/unlink \
    --essential-hook='mkdir -p "$1"/usr/share/man/man1' \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --setup-hook="sync-in $CLIENTS_CACHE /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $CLIENTS_CACHE" \
    "$CLIENTS_SUITE" "$tar" \
    "deb $CLIENTS_MIRROR $CLIENTS_SUITE main" \
    "deb $CLIENTS_MIRROR $CLIENTS_SUITE-updates main" \
    "deb ${CLIENTS_MIRROR%/debian}/debian-security $CLIENTS_SUITE-security main" \
    >"$WORK/mmdebstrap.log" 2>&1 || {
    tail -n 40 "$WORK/mmdebstrap.log" >&2
    die "building $CLIENTS_IMAGE: mmdebstrap failed (its last lines are above; is $CLIENTS_MIRROR reachable? AGENT_SANDBOX_DEBIAN_MIRROR names another)"
  }
  # HOME=/tmp: the root filesystem is read-only in a sandbox and nobody's home does not exist.
  docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    -c 'ENV HOME=/tmp' \
    -c 'USER 65534:65534' \
    -c 'WORKDIR /tmp' \
    -c "LABEL agent-sandbox.image-inputs=$inputs" \
    -c 'CMD ["/bin/sh"]' \
    -m 'agent-sandbox client compatibility workload' \
    "$tar" "$CLIENTS_IMAGE" >/dev/null
  log "built $CLIENTS_IMAGE ($(du -sh "$tar" | cut -f1) tar) in $(($(date +%s) - started)) s"
}

find_jdk() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/jlink" ] \
    && "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then
    echo "$JAVA_HOME"; return
  fi
  for jdk in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
    if [ -x "$jdk/bin/jlink" ] && "$jdk/bin/java" -version 2>&1 | grep -qE 'version "(2[1-9]|[3-9][0-9])'; then
      echo "$jdk"; return
    fi
  done
  die "building the proxy image: no JDK >= 21 with jlink found (set JAVA_HOME)"
}

build_proxy() {
  local jdk jar relay_jar runner rootfs=$WORK/proxy modules
  jdk=$(find_jdk)
  jar=${AGENT_SANDBOX_PROXY_JAR:-$ROOT/proxy/target/agent-sandbox-proxy.jar}
  if [ ! -f "$jar" ]; then
    [ -d "$ROOT/proxy" ] || die "building the proxy image: module proxy/ is not in this checkout"
    log "building $jar"
    (cd "$ROOT" && JAVA_HOME=$jdk ./mvnw -B -q -pl proxy -am package -DskipTests)
  fi
  [ -f "$jar" ] || die "building the proxy image: $jar was not produced"
  # A Kubernetes session's pod takes two more things from this image (docs/backends/k8s.md,
  # "Sessions"): the static step runner, which an init container copies for the agent's
  # container, and the session relay, which runs as a sidecar on this image's JVM.
  relay_jar=${AGENT_SANDBOX_RELAY_JAR:-$ROOT/session-relay/target/agent-sandbox-session-relay.jar}
  runner=${AGENT_SANDBOX_STEP_RUNNER:-$ROOT/step-runner/target/classes/dev/agentsandbox/steprunner/asb-step-runner}
  if [ ! -f "$relay_jar" ] || [ ! -f "$runner" ]; then
    [ -d "$ROOT/session-relay" ] || die "building the proxy image: module session-relay/ is not in this checkout"
    log "building $relay_jar and the step runner"
    (cd "$ROOT" && JAVA_HOME=$jdk ./mvnw -B -q -pl session-relay -am package -DskipTests)
  fi
  [ -f "$relay_jar" ] || die "building the proxy image: $relay_jar was not produced"
  [ -f "$runner" ] || die "building the proxy image: $runner was not produced"
  modules=$( {
    "$jdk/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 21 "$jar"
    "$jdk/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 21 "$relay_jar"
  } | tr ',' '\n' | sort -u | paste -sd, -)
  # jdk.crypto.ec is folded into java.base on newer JDKs; naming only what exists keeps jlink happy.
  log "proxy runtime modules: $modules"
  base_rootfs "$rootfs"
  "$jdk/bin/jlink" --add-modules "$modules" --output "$rootfs/opt/java" \
    --strip-debug --no-man-pages --no-header-files --compress=zip-6 --generate-cds-archive
  for lib in "$rootfs/opt/java/bin/java" "$rootfs"/opt/java/lib/*.so "$rootfs"/opt/java/lib/server/*.so; do
    { ldd "$lib" 2>/dev/null || true; } | { grep -oE '/[^ ]+' || true; } | sort -u | while read -r dep; do
      case "$dep" in "$rootfs"*) continue ;; esac
      [ -e "$dep" ] || continue
      mkdir -p "$rootfs$(dirname "$dep")"
      cp -L "$dep" "$rootfs$dep"
    done
  done
  mkdir -p "$rootfs/opt/proxy"
  cp "$jar" "$rootfs/opt/proxy/agent-sandbox-proxy.jar"
  # The launcher: the backend hands the run's policy over as one environment variable (no host
  # mount, no copy into a read-only root); the launcher writes it to the tmpfs and execs the proxy.
  # A pooled proxy is started before its run: AGENT_SANDBOX_PROXY_AWAIT names where it listens,
  # and its policy arrives later on its standard input (docs/proxy.md, "Awaiting the policy").
  cat >"$rootfs/opt/proxy/start" <<'SH'
#!/bin/sh
set -e
umask 077
if [ -n "$AGENT_SANDBOX_PROXY_AWAIT" ]; then
  listen=$AGENT_SANDBOX_PROXY_AWAIT
  unset AGENT_SANDBOX_PROXY_AWAIT AGENT_SANDBOX_PROXY_POLICY
  exec /opt/java/bin/java $PROXY_JVM_FLAGS -XX:AOTCache=/opt/proxy/proxy.aot \
    -jar /opt/proxy/agent-sandbox-proxy.jar --await-policy --listen "$listen" --decisions - "$@"
fi
printf '%s' "$AGENT_SANDBOX_PROXY_POLICY" >/tmp/policy.json
unset AGENT_SANDBOX_PROXY_POLICY
# A run whose proxy injects credentials: their values, a base64 tar of one file each, become the
# proxy's own folder (its policy's credentials_dir) on its tmpfs, never the workload's. Optional,
# so a backend older than inspection starts this image as before.
if [ -n "$AGENT_SANDBOX_PROXY_CREDENTIALS" ]; then
  mkdir -m 0700 /tmp/proxy-credentials
  printf '%s' "$AGENT_SANDBOX_PROXY_CREDENTIALS" | base64 -d | tar -x -C /tmp/proxy-credentials
fi
unset AGENT_SANDBOX_PROXY_CREDENTIALS
exec /opt/java/bin/java $PROXY_JVM_FLAGS -XX:AOTCache=/opt/proxy/proxy.aot \
  -jar /opt/proxy/agent-sandbox-proxy.jar --policy /tmp/policy.json "$@"
SH
  sed -i "s|\$PROXY_JVM_FLAGS|$PROXY_JVM_FLAGS|" "$rootfs/opt/proxy/start"
  chmod 755 "$rootfs/opt/proxy/start"
  mkdir -p "$rootfs/opt/relay" "$rootfs/opt/step-runner"
  cp "$relay_jar" "$rootfs/opt/relay/agent-sandbox-session-relay.jar"
  cp "$runner" "$rootfs/opt/step-runner/asb-step-runner"
  chmod 755 "$rootfs/opt/step-runner/asb-step-runner"
  # The relay relays one connection: the proxy's small-JVM flags, its heap within its container's
  # 96 MiB limit.
  cat >"$rootfs/opt/relay/start" <<'SH'
#!/bin/sh
exec /opt/java/bin/java $PROXY_JVM_FLAGS -jar /opt/relay/agent-sandbox-session-relay.jar "$@"
SH
  sed -i "s|\$PROXY_JVM_FLAGS|$PROXY_JVM_FLAGS|" "$rootfs/opt/relay/start"
  chmod 755 "$rootfs/opt/relay/start"
  train_aot_cache "$rootfs"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    -c 'ENV PATH=/opt/java/bin:/bin' \
    -c 'USER 65534:65534' \
    -c 'WORKDIR /tmp' \
    -c 'ENTRYPOINT ["/opt/proxy/start"]' \
    -m 'agent-sandbox egress proxy' \
    - "$PROXY_IMAGE" >/dev/null
  log "built $PROXY_IMAGE ($(du -sh "$rootfs" | cut -f1))"
}

# The proxy's JVM flags, the same for the training run and the launcher (an AOT cache is only used
# by a JVM whose GC and heap mode match the one that wrote it). Sized for one run's proxy: a few
# hundred connections need a few MiB of heap (the heap cap stays at 70 % of the container limit);
# C1 only, one compiler thread, a small code cache, 512 KiB thread stacks; the C heap trimmed every
# 2 s (the compiler's arenas freed after start stay mapped otherwise: about 6 MiB of an idle proxy).
# No attach mechanism: no process, whatever its uid, can attach a tool to dump the proxy's heap (where
# an inspecting proxy holds its run CA's key).
PROXY_JVM_FLAGS="-XX:+DisableAttachMechanism -XX:-UsePerfData -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Xss512k -XX:MaxRAMPercentage=70 -XX:MaxMetaspaceSize=64m -XX:ReservedCodeCacheSize=24m -XX:TrimNativeHeapInterval=2000"

# Writes the JDK's AOT cache of the proxy (classes loaded and linked, JDK 24+ JEP 483) into the
# root filesystem: a training run inside a staging image, so that the java binary and the jar have
# the paths and timestamps the final image gives them. The training starts the proxy with a
# loopback-only policy, sends it an allowed and a refused request of each kind (to a busybox nc
# upstream on loopback, no network: --network none) and stops it; the JVM writes the cache on
# exit. A JVM that cannot use the cache (another JDK build) warns and starts without it.
train_aot_cache() {
  local rootfs=$1 out=$WORK/aot
  mkdir -p "$out"
  chmod 777 "$out"
  TRAINING_STARTED=1
  tar -C "$rootfs" --numeric-owner -c . \
    | docker import -m 'agent-sandbox proxy AOT training' - "$TRAINING_IMAGE" >/dev/null
  cat >"$out/train.sh" <<SH
#!/bin/sh
cd /tmp
printf '%s' '{"listen":"127.0.0.1:3128","allow":["a.test:8080","a.test:8081"],"internal":[{"cidr":"127.0.0.1/32","ports":[8080,8081]}],
 "hosts":{"a.test":["127.0.0.1"],"b.test":["127.0.0.1"]},"run_id":"aot-training","decisions":"-"}' >policy.json
printf 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok' | timeout 60 nc -l -p 8080 >/dev/null &
timeout 60 nc -l -p 8081 >/dev/null </dev/null &
/opt/java/bin/java $PROXY_JVM_FLAGS -XX:AOTCacheOutput=/aot/proxy.aot \
  -jar /opt/proxy/agent-sandbox-proxy.jar --policy policy.json >/aot/java.log 2>&1 &
java=\$!
for i in \$(seq 1 600); do grep -q 'ready on' /aot/java.log && break; sleep 0.1; done
http_proxy=http://127.0.0.1:3128 timeout 20 wget -q -O /dev/null http://a.test:8080/ || true
http_proxy=http://127.0.0.1:3128 timeout 20 wget -q -O /dev/null http://b.test:8080/ || true
printf 'CONNECT a.test:8081 HTTP/1.1\r\nHost: a.test:8081\r\n\r\nhello' | timeout 20 nc 127.0.0.1 3128 >/dev/null || true
printf 'CONNECT b.test:8081 HTTP/1.1\r\nHost: b.test:8081\r\n\r\n' | timeout 20 nc 127.0.0.1 3128 >/dev/null || true
kill -TERM \$java
wait \$java
exit 0
SH
  chmod 755 "$out/train.sh"
  local status=0
  # 1 GiB: the JVM that writes the cache is a second JVM beside the trained one.
  timeout 600 docker run --name "$TRAINING_CONTAINER" --network none --user 65534:65534 --memory 1g \
    --label agent-sandbox.image-build=aot-training \
    -v "$out:/aot" --entrypoint /bin/sh "$TRAINING_IMAGE" /aot/train.sh >"$out/docker.log" 2>&1 \
    || status=$?
  docker rm -f "$TRAINING_CONTAINER" >/dev/null 2>&1 || true
  docker rmi "$TRAINING_IMAGE" >/dev/null 2>&1 || true
  TRAINING_STARTED=
  if [ "$status" != 0 ] || [ ! -s "$out/proxy.aot" ]; then
    cat "$out/docker.log" "$out/java.log" >&2 2>/dev/null || true
    die "building the proxy image: the AOT training run wrote no cache (exit $status; its output is above)"
  fi
  cp "$out/proxy.aot" "$rootfs/opt/proxy/proxy.aot"
  chmod 644 "$rootfs/opt/proxy/proxy.aot"
  log "proxy AOT cache: $(du -h "$rootfs/opt/proxy/proxy.aot" | cut -f1)"
}

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(proxy workload)
for target in "${targets[@]}"; do
  case "$target" in
    proxy) build_proxy ;;
    workload) build_workload ;;
    clients) build_clients ;;
    *) die "unknown image '$target' (expected proxy, workload or clients)" ;;
  esac
done
