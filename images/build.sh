#!/usr/bin/env bash
# Builds the Docker backend's local images without any registry, by `docker import` of root
# filesystems assembled from this host's files:
#   agent-sandbox/proxy:dev     a jlink'd Java runtime (only the modules the proxy needs, with a CDS
#                               archive so it starts fast), the shaded proxy jar, busybox for the
#                               one-line launcher that writes the run's policy file
#   agent-sandbox/workload:dev  busybox and curl, the tools the integration tests use inside a sandbox
# Usage: images/build.sh [proxy|workload]...   (both when no argument is given)
#        AGENT_SANDBOX_PROXY_JAR=path/to/agent-sandbox-proxy.jar images/build.sh proxy   (a given jar)
# Needs: docker, busybox-static (apt), curl, a JDK >= 21 (JAVA_HOME or /usr/lib/jvm/temurin-25-*).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/agent-sandbox-images.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

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
  local jdk jar rootfs=$WORK/proxy modules
  jdk=$(find_jdk)
  jar=${AGENT_SANDBOX_PROXY_JAR:-$ROOT/proxy/target/agent-sandbox-proxy.jar}
  if [ ! -f "$jar" ]; then
    [ -d "$ROOT/proxy" ] || die "building the proxy image: module proxy/ is not in this checkout"
    log "building $jar"
    (cd "$ROOT" && JAVA_HOME=$jdk ./mvnw -B -q -pl proxy -am package -DskipTests)
  fi
  [ -f "$jar" ] || die "building the proxy image: $jar was not produced"
  modules=$("$jdk/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 21 "$jar")
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
  cat >"$rootfs/opt/proxy/start" <<'SH'
#!/bin/sh
set -e
umask 077
printf '%s' "$AGENT_SANDBOX_PROXY_POLICY" >/tmp/policy.json
unset AGENT_SANDBOX_PROXY_POLICY
exec /opt/java/bin/java -XX:-UsePerfData -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -XX:MaxRAMPercentage=70 \
  -Xshare:auto -jar /opt/proxy/agent-sandbox-proxy.jar --policy /tmp/policy.json "$@"
SH
  chmod 755 "$rootfs/opt/proxy/start"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    -c 'ENV PATH=/opt/java/bin:/bin' \
    -c 'USER 65534:65534' \
    -c 'WORKDIR /tmp' \
    -c 'ENTRYPOINT ["/opt/proxy/start"]' \
    -m 'agent-sandbox egress proxy' \
    - agent-sandbox/proxy:dev >/dev/null
  log "built agent-sandbox/proxy:dev ($(du -sh "$rootfs" | cut -f1))"
}

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(proxy workload)
for target in "${targets[@]}"; do
  case "$target" in
    proxy) build_proxy ;;
    workload) build_workload ;;
    *) die "unknown image '$target' (expected proxy or workload)" ;;
  esac
done
