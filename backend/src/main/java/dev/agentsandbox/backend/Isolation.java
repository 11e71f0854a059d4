package dev.agentsandbox.backend;

/**
 * How strong a sandbox's isolation boundary is, weakest first, so that {@link Enum#compareTo}
 * orders strength.
 *
 * <p>A microVM gives the workload its own kernel; gVisor interposes a user-space kernel between the
 * workload and the host's; a plain container shares the host kernel behind namespaces and seccomp,
 * which is not a security boundary against hostile code.
 */
public enum Isolation {
  /** runc or the node's default runtime: namespaces, cgroups and seccomp on the host kernel. */
  CONTAINER,
  /** gVisor (runsc): a user-space kernel intercepts the workload's system calls. */
  GVISOR,
  /**
   * A microVM with its own guest kernel whose CPU is emulated in software (QEMU's TCG), for hosts
   * without usable hardware virtualization and for tests. As strong a boundary as {@link #MICROVM}
   * in what the guest can reach, but far slower, so {@link BackendSelector} never picks it for
   * {@code auto}: an operator must ask for it.
   */
  EMULATED,
  /** A microVM with its own guest kernel on hardware virtualization (KVM). */
  MICROVM
}
