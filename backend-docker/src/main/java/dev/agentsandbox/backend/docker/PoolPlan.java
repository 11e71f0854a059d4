package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunSpec;
import java.util.List;
import java.util.Map;

/** What a run's plan says about the proxy pool, when the backend keeps one. */
final class PoolPlan {
  private PoolPlan() {}

  /**
   * What the plan says about the proxy pool: which of the objects below a standby provides when one
   * is ready at launch, and how its proxy gets the run's policy.
   */
  static Manifest manifest(RunSpec spec, int size, int proxyPort) {
    String standby = "asb-" + ProxyPool.ID_PREFIX + "<id>";
    Map<String, Object> body = new java.util.LinkedHashMap<>();
    body.put("Size", size);
    body.put(
        "WhenAStandbyIsReady",
        List.of(
            "volume " + FenceLayout.workspaceName(spec.runId()) + " is " + standby + "-workspace",
            "volume "
                + FenceLayout.credentialsName(spec.runId())
                + " is "
                + standby
                + "-credentials",
            "network " + FenceLayout.fenceName(spec.runId()) + " is " + standby + "-fence",
            "network " + FenceLayout.egressName(spec.runId()) + " is " + standby + "-egress",
            "container "
                + FenceLayout.proxyName(spec.runId())
                + " is "
                + standby
                + "-proxy, created before the run with OpenStdin and"
                + " AGENT_SANDBOX_PROXY_AWAIT=<proxy-ip>:"
                + proxyPort
                + " instead of AGENT_SANDBOX_PROXY_POLICY, refusing every request until the"
                + " value of AGENT_SANDBOX_PROXY_POLICY below is written to its standard input"
                + " over the Engine API's attach",
            "those objects carry the standby's labels (run-id "
                + ProxyPool.ID_PREFIX
                + "<id>, agent "
                + ProxyStandby.AGENT_LABEL
                + "), not the run's; the workload container and everything after the proxy are"
                + " the run's own, as listed"));
    body.put("Otherwise", "every object is created for the run, as listed");
    return new Manifest("proxy-pool", standby, body);
  }
}
