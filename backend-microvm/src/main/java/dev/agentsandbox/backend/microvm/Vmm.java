package dev.agentsandbox.backend.microvm;

import java.util.List;

/**
 * A virtual machine monitor: how to start one VM of a run. QEMU's {@code microvm} machine is the
 * one driver here; a Firecracker driver (its REST API on a Unix socket, its jailer) fits behind the
 * same seam on a host that has it.
 */
interface Vmm {
  /** The runtime name that {@code plan}, runs and audit rows show, such as {@code qemu-tcg}. */
  String runtime();

  /**
   * The command line that starts the VM, as the unprivileged user it runs as, bounded to its
   * control plane's life and to {@link VmRequest#lifetime()} ({@link HostChildren#bounded}).
   */
  List<String> commandLine(VmRequest request);

  /**
   * One VM to start.
   *
   * @param name a name carrying the run id, visible in the host's process list
   * @param vcpus virtual CPUs
   * @param memoryMb guest memory in MiB
   * @param kernelCommandLine the guest kernel's command line
   * @param initramfs the run's initramfs
   * @param rootDisk the shared read-only root disk
   * @param outputDisk the run's writable output disk (raw), onto which the guest writes its outputs
   * @param tap the tap device the VM's one network interface uses
   * @param mac the VM's MAC address
   * @param outputSocket the Unix socket the guest's output port connects to
   * @param statusSocket the Unix socket the guest's status port connects to
   * @param controlSocket the Unix socket the guest's control port connects to
   * @param consoleLog where the guest's serial console goes
   * @param uid the uid the VMM runs as
   * @param gid the gid the VMM runs as
   * @param lifetime the longest the VMM may live, whatever happens to its control plane: its run's
   *     ttl and the grace to stop it
   */
  record VmRequest(
      String name,
      int vcpus,
      int memoryMb,
      String kernelCommandLine,
      String initramfs,
      String rootDisk,
      String outputDisk,
      String tap,
      String mac,
      String outputSocket,
      String statusSocket,
      String controlSocket,
      String consoleLog,
      String uid,
      String gid,
      java.time.Duration lifetime) {}
}
