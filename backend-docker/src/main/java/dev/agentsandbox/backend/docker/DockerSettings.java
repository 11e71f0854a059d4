package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.Network;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a Docker backend learns from its daemon and host to run with, beyond its configuration: the
 * subnet pool when it is automatic ({@link AutomaticSubnets}), the proxy pool's size when it is
 * automatic ({@link ProxyPoolSizing}), and the words {@code serve} and the probe show for both.
 */
final class DockerSettings {
  private static final Logger LOG = LoggerFactory.getLogger(DockerSettings.class);

  private final DockerClient client;
  private final DockerBackendConfig config;

  DockerSettings(DockerClient client, DockerBackendConfig config) {
    this.client = client;
    this.config = config;
  }

  /** The operator's subnet pool, or one chosen now, free on the daemon and this host. */
  SubnetPool chooseSubnets() {
    if (config.subnetPool().isPresent()) {
      return config.subnetPool().get();
    }
    int standbys = config.proxyPoolSize().orElse(ProxyPoolSizing.forHostMemory(Long.MAX_VALUE));
    return AutomaticSubnets.choose(
        config.concurrentRuns(),
        standbys,
        config.instance(),
        daemonNetworks(),
        AutomaticSubnets.hostRoutes());
  }

  /** An automatic pool's size: from the daemon host's memory (asked once, on the pool's thread). */
  int automaticPoolSize() {
    Long memory = client.infoCmd().exec().getMemTotal();
    return ProxyPoolSizing.forHostMemory(memory == null ? 0 : memory);
  }

  /**
   * The subnets and proxy pool a backend runs with, for {@code serve}'s start lines and the probe;
   * the pool's size is learnt now when it is automatic and not known yet.
   */
  String describe(SubnetPool range, ProxyPool<?> pool, Info info) {
    String subnetLine =
        "subnets: a /"
            + range.blockPrefix()
            + " per network from "
            + range.range()
            + (config.subnetPool().isPresent()
                ? " (--docker-subnet-pool)"
                : " (automatic: free on the daemon and this host, room for "
                    + range.blocks() / SubnetPool.BLOCKS_PER_RUN
                    + " runs and standbys; --docker-subnet-pool CIDR to change)");
    long memory = info.getMemTotal() == null ? 0 : info.getMemTotal();
    String poolLine;
    if (pool.sizing().automatic()) {
      poolLine = ProxyPoolSizing.explain(pool.sizing().resolve(), memory);
    } else {
      int size = pool.sizing().resolve();
      poolLine =
          size == 0
              ? "off (--docker-proxy-pool N to keep proxies started)"
              : size + (size == 1 ? " standby" : " standbys") + " (--docker-proxy-pool)";
    }
    return subnetLine + "; proxy pool: " + poolLine;
  }

  /** The subnets and labels of every network the daemon has, whoever created it. */
  List<AutomaticSubnets.DaemonNetwork> daemonNetworks() {
    List<AutomaticSubnets.DaemonNetwork> found = new ArrayList<>();
    List<Network> networks;
    try {
      networks = client.listNetworksCmd().exec();
    } catch (RuntimeException e) {
      throw new UnableToLaunchSandboxException(
          "listing the daemon's networks to pick free subnets: " + DockerErrors.describe(e), e);
    }
    for (Network network : networks) {
      Network.Ipam ipam = network.getIpam();
      if (ipam == null || ipam.getConfig() == null) {
        continue;
      }
      Map<String, String> labels = network.getLabels() == null ? Map.of() : network.getLabels();
      for (Network.Ipam.Config ipamConfig : ipam.getConfig()) {
        String subnet = ipamConfig.getSubnet();
        if (subnet == null || subnet.isBlank()) {
          continue;
        }
        try {
          found.add(new AutomaticSubnets.DaemonNetwork(Cidr.parse(subnet), labels));
        } catch (IllegalArgumentException notACidr) {
          // The daemon's own words for a subnet that is no CIDR: no block of ours can be in it.
          LOG.debug("network {}: subnet {} is not a CIDR", network.getName(), subnet);
        }
      }
    }
    return found;
  }
}
