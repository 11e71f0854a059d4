package dev.agentsandbox.policy.config;

import java.util.Locale;
import java.util.Optional;

/**
 * The backend a configuration asks for, ordered by the isolation it guarantees.
 *
 * <p>The order used for weakening detection is {@code firecracker} and {@code microvm} (a microVM)
 * &gt; {@code k8s} (gVisor through a RuntimeClass where the cluster has one) &gt; {@code docker}
 * (gVisor when the daemon has runsc, else runc) &gt; {@code auto}. {@code auto} ranks weakest
 * because it promises only "whatever this host has": a named backend refuses when it is missing,
 * {@code auto} never does. Moving to a lower rank is a loosening.
 */
public enum Backend {
  /** The strongest backend the host has, whatever that is. */
  AUTO(0),
  /** Containers on an internal Docker network. */
  DOCKER(1),
  /** Pods on Kubernetes. */
  K8S(2),
  /** Firecracker microVMs. */
  FIRECRACKER(3),
  /** QEMU microVMs (the {@code microvm} machine), behind an nftables fence. */
  MICROVM(3);

  private final int strength;

  Backend(int strength) {
    this.strength = strength;
  }

  /** Rank in the isolation order; higher is stronger. */
  public int strength() {
    return strength;
  }

  /** The name used in configuration documents. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The backend with this configuration name, if any. */
  public static Optional<Backend> fromWireName(String name) {
    for (Backend backend : values()) {
      if (backend.wireName().equals(name)) {
        return Optional.of(backend);
      }
    }
    return Optional.empty();
  }
}
