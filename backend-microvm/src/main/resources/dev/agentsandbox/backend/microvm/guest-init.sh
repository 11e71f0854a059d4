#!/bin/sh
# The guest's PID 1 (busybox sh from the base initramfs). It loads the virtio drivers, mounts the
# run's read-only root disk, gives it a writable /tmp and /workspace, configures the one network
# interface, caps the workload's processes and memory with a cgroup, runs the command as an
# unprivileged user with no capabilities, and sends its output and exit status to the host over two
# virtio-serial ports (or, for a session, starts the step runner on the control port instead of a
# command). When the workload has ended (or the host asked on the control port to stop
# it), it writes /workspace/out as a tar onto the output disk. Then it resets the machine, which
# ends the VMM (-no-reboot).
#
# The run's settings come from /asb/run.env, /asb/argv, /asb/envv and /asb/credentials/, which the
# host appends to the base initramfs as a second cpio archive; every value in the first three is
# single-quoted by the host. Nothing here prints a credential or the environment: the console goes
# to a log the host keeps.
export PATH=/bin

fail() {
  echo "agent-sandbox guest: $*" >&2
  [ -e /dev/asb-status ] && echo "error $*" >/dev/asb-status
  sync
  reboot -f
  sleep 5
  exit 1
}

mount -t proc -o nosuid,nodev,noexec proc /proc || fail "mounting /proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "mounting /sys"
mount -t devtmpfs -o nosuid,noexec devtmpfs /dev || fail "mounting /dev"

for module in virtio_ring virtio virtio_mmio virtio_blk failover net_failover virtio_net \
  virtio_console; do
  insmod /lib/modules/$module.ko || fail "loading kernel module $module"
done

. /asb/run.env || fail "reading /asb/run.env"
# The wall clock: the guest has no RTC, so it would start at 1970 and TLS clients would call every
# certificate "not yet valid". The host's time at launch; the guest runs behind by its boot time.
date -s "@$ASB_CLOCK" >/dev/null || fail "setting the clock"

# Probe mode: the host only wants to know that a guest boots here (its KVM really works).
if [ "${ASB_PROBE:-0}" = 1 ]; then
  tries=0
  until [ -e /sys/class/virtio-ports/vport0p1/name ] && [ -n "$(cat /sys/class/virtio-ports/vport0p1/name)" ]; do
    tries=$((tries + 1))
    [ "$tries" -gt 500 ] && break
    usleep 20000
  done
  for port in /sys/class/virtio-ports/*; do
    [ "$(cat "$port/name")" = asb-status ] && echo "probe ok" >"/dev/${port##*/}"
  done
  sync
  reboot -f
fi

# Devices appear asynchronously once their drivers bind, and a port's name arrives after the
# port itself; wait (bounded) for all of them. The two disks are told apart by the serial numbers
# the host gave them, not by the order the kernel happened to find them in.
channels_named() {
  for port in /sys/class/virtio-ports/*; do
    name=$(cat "$port/name" 2>/dev/null)
    [ -n "$name" ] && [ ! -e "/dev/$name" ] && ln -s "/dev/${port##*/}" "/dev/$name"
  done
  [ -e /dev/asb-out ] && [ -e /dev/asb-status ] && [ -e /dev/asb-control ]
}
disks_named() {
  for disk in /sys/block/vd*; do
    serial=$(cat "$disk/serial" 2>/dev/null)
    case "$serial" in
      asb-root) root_disk=/dev/${disk##*/} ;;
      asb-out) out_disk=/dev/${disk##*/} ;;
    esac
  done
  [ -b "$root_disk" ] && [ -b "$out_disk" ]
}
root_disk=
out_disk=
tries=0
until disks_named && [ -e /sys/class/net/eth0 ] && channels_named; do
  tries=$((tries + 1))
  [ "$tries" -gt 1000 ] && fail "the virtio devices did not appear within 20 s"
  usleep 20000
done

# The image's files: read-only, no device nodes, no set-user-id (nor file capabilities).
mount -t ext4 -o ro,nosuid,nodev "$root_disk" /newroot || fail "mounting the root disk"
mount -t tmpfs -o nosuid,nodev,size=${ASB_TMPFS_MB}m,mode=1777 tmpfs /newroot/tmp \
  || fail "mounting /tmp"
# The workspace and its out/ folder: the workload's alone (0700), there before it starts.
mount -t tmpfs -o nosuid,nodev,size=${ASB_WORKSPACE_MB}m,mode=0700,uid=$ASB_UID,gid=$ASB_GID \
  tmpfs /newroot/workspace || fail "mounting /workspace"
mkdir -m 0700 /newroot/workspace/out && chown "$ASB_UID:$ASB_GID" /newroot/workspace/out \
  || fail "creating /workspace/out"
# The credentials: a tmpfs on /run, the folder readable by the workload's user alone (0500), each
# file 0400 and the workload's. The copies in this initramfs are deleted once placed.
credentials=/newroot/run/agent-sandbox/credentials
mount -t tmpfs -o nosuid,nodev,noexec,size=2m,mode=0755 tmpfs /newroot/run \
  && mkdir -m 0755 /newroot/run/agent-sandbox && mkdir -m 0700 "$credentials" \
  || fail "mounting the credentials' tmpfs"
for file in /asb/credentials/*; do
  [ -f "$file" ] || continue
  cp "$file" "$credentials/" && chmod 0400 "$credentials/${file##*/}" \
    && chown "$ASB_UID:$ASB_GID" "$credentials/${file##*/}" || fail "placing a credential"
done
rm -rf /asb/credentials
chown "$ASB_UID:$ASB_GID" "$credentials" && chmod 0500 "$credentials" \
  || fail "handing the credentials to the workload's user"
# A run whose proxy inspects hosts: its CA's certificate joins the image's own bundle (the first of
# the usual places that holds one), so tunnelled hosts still verify; every file is read-only.
if [ -f /asb/trust/run-ca.pem ]; then
  trust=/newroot/run/agent-sandbox/trust
  mkdir -m 0755 "$trust" || fail "creating the trust folder"
  cp /asb/trust/run-ca.pem /asb/trust/ca-bundle.p12 "$trust/" || fail "placing the run CA"
  bundle=
  for candidate in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \
    /etc/ssl/cert.pem /etc/ssl/ca-bundle.pem; do
    [ -z "$bundle" ] && [ -s "/newroot$candidate" ] && bundle=/newroot$candidate
  done
  { if [ -n "$bundle" ]; then cat "$bundle" && echo; fi && cat "$trust/run-ca.pem"; } \
    >"$trust/ca-bundle.pem" || fail "joining the run CA to the image's bundle"
  chmod 0444 "$trust"/* && chmod 0555 "$trust" || fail "making the trust files read-only"
  rm -rf /asb/trust
fi
mount -t proc -o nosuid,nodev,noexec,hidepid=2 proc /newroot/proc || fail "mounting the workload's /proc"
mount -t tmpfs -o nosuid,noexec,size=64k,mode=0755 tmpfs /newroot/dev || fail "mounting the workload's /dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name major minor <<NODE
$node
NODE
  mknod -m 0666 "/newroot/dev/$name" c "$major" "$minor" || fail "creating /dev/$name"
done
ln -s /proc/self/fd /newroot/dev/fd

# One interface, one address; the default route leads to the host, whose nftables fence lets
# through only the proxy's port on its own side of the tap.
ip link set lo up && ip link set eth0 up \
  && ip addr add "$ASB_ADDRESS/$ASB_PREFIX" dev eth0 \
  && ip route add default via "$ASB_GATEWAY" || fail "configuring eth0"

# Caps for everything the workload starts: processes (a fork bomb stops here) and memory (the
# kernel's OOM killer picks inside this group, never this init).
mkdir -p /sys/fs/cgroup && mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup \
  || fail "mounting cgroup2"
echo "+pids +memory" >/sys/fs/cgroup/cgroup.subtree_control || fail "enabling the pids and memory controllers"
mkdir /sys/fs/cgroup/workload && echo "$ASB_PIDS" >/sys/fs/cgroup/workload/pids.max \
  && echo "${ASB_MEMORY_MB}M" >/sys/fs/cgroup/workload/memory.max \
  && echo 0 >/sys/fs/cgroup/workload/memory.swap.max 2>/dev/null
[ "$(cat /sys/fs/cgroup/workload/pids.max)" = "$ASB_PIDS" ] || fail "setting pids.max"

environment=$(cat /asb/envv) || fail "reading /asb/envv"
rm -f /asb/envv
if [ "${ASB_SESSION:-0}" = 1 ]; then
  # A session: no command; the step runner (docs/step-runner.md) takes steps and file operations
  # from the host over the control port, as the workload's user, chrooted into the image. It is
  # given the workload's cgroup to make one child cgroup per step in (so a kill reaches all a step
  # started): the folder and its cgroup.procs become the user's, the limits stay root's and bound
  # the runner and every step together.
  mkdir /sys/fs/cgroup/workload/runner \
    && chown "$ASB_UID:$ASB_GID" /sys/fs/cgroup/workload /sys/fs/cgroup/workload/cgroup.procs \
    || fail "handing the workload's cgroup to the step runner"
  echo "ready" >/dev/asb-status
  (
    echo 0 >/sys/fs/cgroup/workload/runner/cgroup.procs || exit 125
    eval "exec env -i $environment /bin/asb-step-runner --in 3 --out 3 --chroot /newroot \
      --workspace /workspace --uid \"\$ASB_UID\" --gid \"\$ASB_GID\" --cgroup-fd 4"
  ) 3<>/dev/asb-control 4</sys/fs/cgroup/workload </dev/null >/dev/null &
  workload=$!
  wait "$workload"
  status=$?
  environment=
  echo "exit $status" >/dev/asb-status
else
  # The host asks on the control port to stop the workload (its deadline, a kill); everything in
  # the workload's group dies at once, and the outputs are still written below.
  (
    read -r request </dev/asb-control && [ "$request" = stop ] \
      && echo 1 >/sys/fs/cgroup/workload/cgroup.kill
  ) </dev/null >/dev/null 2>&1 &
  control=$!

  echo "ready" >/dev/asb-status

  # No new privileges, then chroot into the image and switch to the workload's user; the kernel
  # clears every capability when a root process changes to a non-zero uid.
  eval "set -- $(cat /asb/argv)" || fail "reading /asb/argv"
  (
    # "0" moves the writer itself: this subshell. ($$ would be the init's own pid, PID 1.)
    echo 0 >/sys/fs/cgroup/workload/cgroup.procs || exit 125
    eval "exec env -i $environment setpriv --nnp nsenter -r/newroot -w/newroot/workspace \
      -S \"\$ASB_UID\" -G \"\$ASB_GID\" -- \"\$@\""
  ) </dev/null >/dev/asb-out 2>&1 &
  workload=$!
  wait "$workload"
  status=$?
  environment=
  kill "$control" 2>/dev/null
  echo "exit $status" >/dev/asb-status
fi

# Nothing of the workload may still be writing while out/ is archived: stop what it left running.
echo 1 >/sys/fs/cgroup/workload/cgroup.kill 2>/dev/null
tries=0
# cgroup.events, not cgroup.procs: a session's steps live in child cgroups of the workload's.
while grep -q "populated 1" /sys/fs/cgroup/workload/cgroup.events && [ "$tries" -lt 250 ]; do
  tries=$((tries + 1))
  usleep 20000
done
# Links are archived as links, never followed; the host reads this disk as hostile all the same.
if tar -c -f "$out_disk" -C /newroot/workspace out 2>/dev/null; then
  echo "outputs ok" >/dev/asb-status
else
  echo "outputs failed" >/dev/asb-status
fi
sync
reboot -f
