#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host for the Docker backend: installs docker.io and runsc (and what
# images/build.sh needs: busybox-static, curl, mmdebstrap; iproute2 and git for the tests; tmux, in which the CLI's
# tests record a terminal session) when they are missing, registers runsc as a Docker runtime,
# installs the agent-sandbox bash/zsh completion when the CLI jar is built, and starts dockerd if
# no daemon answers.
# For the microVM backend (docs/backends/microvm.md) it installs qemu-system-x86, nftables,
# util-linux and e2fsprogs, unpacks Debian's cloud kernel into /var/lib/agent-sandbox/microvm/kernel
# (never into /boot) and opens /dev/net/tun to the VMMs' group.
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
# images/build.sh makes the client compatibility suite's image from Debian packages with mmdebstrap;
# that suite's test serves a git repository through the host's `git http-backend`.
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
command -v git >/dev/null 2>&1 || missing+=(git)
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

# --- microVM backend (docs/backends/microvm.md) ---------------------------------------------
# QEMU's microvm machine, nftables for the fence, and Debian's cloud kernel as the guest kernel.
# The kernel package is unpacked into a cache directory, never installed into this host's /boot.
MICROVM_DIR=${AGENT_SANDBOX_MICROVM_DIR:-/var/lib/agent-sandbox/microvm}
MICROVM_VMM_GID=${AGENT_SANDBOX_MICROVM_VMM_GID:-2200000}
vm_missing=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || vm_missing+=(qemu-system-x86)
command -v nft >/dev/null 2>&1 || vm_missing+=(nftables)
command -v setpriv >/dev/null 2>&1 || vm_missing+=(util-linux)
command -v mkfs.ext4 >/dev/null 2>&1 || vm_missing+=(e2fsprogs)
if [ "${#vm_missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${vm_missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y --no-install-recommends "${vm_missing[@]}"
  fi
  log "installed ${vm_missing[*]}"
fi
if [ ! -f "$MICROVM_DIR/kernel/vmlinuz" ]; then
  kdl=$(mktemp -d)
  # apt-get download runs as _apt where it can; the temporary directory must let it write.
  chmod 0777 "$kdl"
  ( cd "$kdl" && apt-get download linux-image-cloud-amd64 >/dev/null 2>&1 ) ||
    { apt-get update -qq && ( cd "$kdl" && apt-get download linux-image-cloud-amd64 ); }
  kpkg=$(dpkg-deb -f "$kdl"/linux-image-cloud-amd64_*.deb Depends | sed 's/[ ,(].*//')
  ( cd "$kdl" && apt-get download "$kpkg" )
  dpkg-deb -x "$kdl/${kpkg}"_*.deb "$kdl/x"
  mkdir -p "$MICROVM_DIR/kernel/modules"
  install -m 0644 "$kdl"/x/boot/vmlinuz-* "$MICROVM_DIR/kernel/vmlinuz"
  for m in virtio_ring virtio virtio_mmio virtio_blk failover net_failover virtio_net virtio_console; do
    install -m 0644 "$(find "$kdl/x/lib/modules" -name "$m.ko" | head -n 1)" "$MICROVM_DIR/kernel/modules/$m.ko"
  done
  echo "$kpkg" >"$MICROVM_DIR/kernel/package"
  rm -rf "$kdl"
  log "unpacked guest kernel $kpkg into $MICROVM_DIR/kernel"
fi
mkdir -p "$MICROVM_DIR/cache" && chmod 0755 "$MICROVM_DIR" "$MICROVM_DIR/cache" "$MICROVM_DIR/kernel"
# The VMMs run as unprivileged uids in group $MICROVM_VMM_GID; only that group may open the tun
# device (Debian's udev default is 0666 for everyone; containers often have 0600 for root).
chgrp "$MICROVM_VMM_GID" /dev/net/tun && chmod 0660 /dev/net/tun
# Under KVM the VMMs also open /dev/kvm, as members of its group: Debian's udev default is
# root:kvm 0660; where it is root's alone (containers), give it to the kvm group.
if [ -e /dev/kvm ] && [ "$(stat -c %g /dev/kvm)" = 0 ]; then
  getent group kvm >/dev/null || groupadd --system kvm
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
  log "gave /dev/kvm to the kvm group (mode 0660)"
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
